// The browser the dashboard tests and the quick-start test drive: found the way the stack finds
// PostgreSQL (src/stack/local-stack.ts): CHROMIUM_PATH if set, else a usual install path; when none
// is there and we are root on a Debian-like machine, installed with apt (package `chromium`);
// otherwise one line saying exactly what to install. Resolved once, by the integration global
// setup, so files running side by side never race two installs.
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

export const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable', '/snap/bin/chromium'];

/** Flags for headless Chromium on a machine with a closed network (no background connections). */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface BrowserEnv {
  /** CHROMIUM_PATH */
  configured?: string;
  candidates?: string[];
  executable?: (path: string) => boolean;
  isRoot?: boolean;
  hasApt?: boolean;
  install?: () => void;
  log?: (line: string) => void;
}

const executable = (p: string) => {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

function onPath(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function aptInstallChromium() {
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

export class BrowserNotFound extends Error {}

/** The Chromium executable to use; installs it with apt when allowed and needed. */
export function resolveChromium(env: BrowserEnv = {}): string {
  const isExec = env.executable ?? executable;
  const configured = env.configured ?? process.env.CHROMIUM_PATH;
  if (configured) {
    if (isExec(configured)) return configured;
    throw new BrowserNotFound(`CHROMIUM_PATH=${configured} is not an executable file; point it at a Chromium or Chrome binary, or unset it to use ${CHROMIUM_CANDIDATES[0]}`);
  }
  const candidates = env.candidates ?? CHROMIUM_CANDIDATES;
  const found = () => candidates.find(isExec);
  const first = found();
  if (first) return first;
  const isRoot = env.isRoot ?? process.getuid?.() === 0;
  const hasApt = env.hasApt ?? onPath('apt-get');
  if (isRoot && hasApt) {
    (env.log ?? console.log)('Chromium not found: installing it with apt-get (chromium) for the browser tests…');
    (env.install ?? aptInstallChromium)();
    const installed = found();
    if (installed) return installed;
    throw new BrowserNotFound(`apt-get install chromium finished but none of ${candidates.join(', ')} exists; set CHROMIUM_PATH`);
  }
  throw new BrowserNotFound(
    `Chromium was not found (looked at ${candidates.join(', ')}); the dashboard tests need it: install it (Debian/Ubuntu: sudo apt-get install chromium) or set CHROMIUM_PATH to a Chromium or Chrome binary`,
  );
}
