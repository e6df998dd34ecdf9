// The owner's dashboard in a real browser, for the dashboard*.test.ts files: Chromium (browser.ts)
// driven by playwright-core against a real service of the file's own on the shared stack. It records
// every request that leaves the service's origin and every Content-Security-Policy violation the
// browser reports, so each file can end by checking there were none.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { CHROMIUM_ARGS } from './browser.js';
import { startTestService, type TestProject, type TestService } from './service.js';

const ROOT = join(import.meta.dirname, '../..');

// UPDATE_SCREENSHOTS=1 refreshes the pictures of the README and docs/; other runs (CI) keep theirs out of the tree.
const SHOTS = process.env.UPDATE_SCREENSHOTS ? join(ROOT, 'docs/screenshots') : join(tmpdir(), 'dashboard-screenshots');

export interface Dashboard {
  svc: TestService;
  /** an enterprise project; its owner's token is the one signIn() uses by default */
  owner: TestProject;
  page: Page;
  /** requests the page made outside the service's origin (data: URLs aside) */
  offOrigin: string[];
  /** console messages about Content-Security-Policy */
  cspViolations: string[];
  /** a full-page screenshot, name.png (see SHOTS) */
  shot(name: string): Promise<void>;
  /** the dashboard at a hash route (the session of the last sign-in carries over) */
  open(route: string): Promise<void>;
  /** signs in through the sign-in page and waits until the owner's project is listed */
  signIn(token?: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * web/ensure-built.mjs under a lock: the dashboard files run side by side, and two builds at once
 * would write web/dist over each other. A lock left by a killed run is taken over after 5 minutes.
 */
async function ensureBuilt() {
  const lock = join(tmpdir(), `dashboard-build-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}.lock`);
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 300_000) rmSync(lock, { recursive: true, force: true });
      else await sleep(200);
    }
  }
  try {
    const built = spawnSync(process.execPath, ['web/ensure-built.mjs'], { cwd: ROOT, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('the dashboard did not build (npm run build:web)');
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * roles: the service's (api only unless said; deliveries need the dispatcher and projector too);
 * env: extra configuration of the service (e.g. SMTP_URL for mail the page's actions send)
 */
export async function startDashboard(opts: { roles?: string[]; env?: Record<string, string> } = {}): Promise<Dashboard> {
  await ensureBuilt();
  const svc = await startTestService({ roles: opts.roles ?? ['api'], env: opts.env });
  let profile: string | undefined;
  let browser: BrowserContext | undefined;
  const stop = async () => {
    await browser?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await svc.stop();
  };
  try {
    const owner = await svc.project('enterprise');
    profile = mkdtempSync(join(tmpdir(), 'dashboard-chromium-'));
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: inject('chromium'),
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 860 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    const page = browser.pages()[0] ?? (await browser.newPage());
    const offOrigin: string[] = [];
    const cspViolations: string[] = [];
    const origin = new URL(svc.url).origin;
    page.on('request', (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) offOrigin.push(r.url());
    });
    page.on('console', (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text());
    });
    const open = async (route: string) => {
      await page.goto(`${svc.url}/dashboard/#${route}`);
    };
    return {
      svc,
      owner,
      page,
      offOrigin,
      cspViolations,
      async shot(name) {
        mkdirSync(SHOTS, { recursive: true });
        await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
      },
      open,
      async signIn(token = owner.ownerToken) {
        await page.goto(`${svc.url}/dashboard/`);
        await page.getByLabel('Owner token').fill(token);
        await page.keyboard.press('Enter');
        await page.getByRole('link', { name: new RegExp(owner.ref) }).waitFor();
      },
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
