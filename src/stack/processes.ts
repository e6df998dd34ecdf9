// Probes and waits the local stack uses on its child processes: is a pid alive, does a port
// accept connections, wait until a check passes (showing the end of the part's log when it does
// not), and where a command is on PATH.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function portOpen(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, logFile?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(300);
  }
  const tail = logFile && existsSync(logFile) ? '\n--- last lines of ' + logFile + ' ---\n' + readFileSync(logFile, 'utf8').split('\n').slice(-25).join('\n') : '';
  throw new Error(`${what} did not become ready within ${Math.round(timeoutMs / 1000)}s${tail}`);
}

export function which(cmd: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}
