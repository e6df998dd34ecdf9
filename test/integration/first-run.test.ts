// A newcomer's first hour, against the real thing: `npm start` as a person runs it (a child
// process through npm, on the shared stack, with an empty control database of its own).
//  - the first start prints the dev project, the next steps, and no warning or error at all;
//  - the README's quick start (a first webhook, a first SSO sign-in) works as written: its shell
//    blocks are read out of README.md and run with bash, the browser step in Chromium;
//  - a second instance on a busy port exits with one line before joining any consumer group;
//  - Ctrl-C and SIGTERM stop cleanly and leave the consumer groups; the drain is bounded; a second
//    signal exits at once; npm killed with -9 does not leave the service running; what a stop cut
//    off is delivered by the next start.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { repoRoot } from '../../src/config.js';
import { CHROMIUM_ARGS } from '../helpers/browser.js';
import { childEnv } from '../helpers/delivery-tools.js';
import { eventually, uniqueName } from '../helpers/env.js';
import { freePort, startTestService, type TestService } from '../helpers/service.js';

interface Run {
  proc: ChildProcess;
  out: string;
  err: string;
  exit: Promise<{ code: number | null; signal: string | null }>;
  /** pino's JSON lines of stdout */
  lines(): Array<{ level: number; msg: string; [k: string]: unknown }>;
}

/** `npm start` in a process group of its own (so a test can play the terminal's Ctrl-C). */
function npmStart(env: NodeJS.ProcessEnv): Run {
  const proc = spawn('npm', ['start'], { cwd: repoRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const run: Run = {
    proc,
    out: '',
    err: '',
    exit: new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal }))),
    lines: () =>
      run.out
        .split('\n')
        .filter((l) => l.startsWith('{"level"'))
        .map((l) => JSON.parse(l)),
  };
  proc.stdout!.on('data', (c) => (run.out += c));
  proc.stderr!.on('data', (c) => (run.err += c));
  return run;
}

const ready = (run: Run) => eventually(async () => run.lines().some((l) => String(l.msg).startsWith('service ready')), 90_000, `service ready; output so far:\n${run.out}\n${run.err}`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pid of the node process npm started (`exec` in the start script: npm's only child). */
async function servicePid(run: Run): Promise<number> {
  return eventually(async () => {
    const ps = spawn('ps', ['-o', 'pid=,args=', '--ppid', String(run.proc.pid)]);
    let out = '';
    ps.stdout.on('data', (c) => (out += c));
    await new Promise((r) => ps.on('exit', r));
    const line = out.split('\n').find((l) => l.includes('dist/src/main.js'));
    return line ? Number(line.trim().split(/\s+/)[0]) : undefined;
  }, 10_000, 'the service process under npm');
}

/** The README's fenced sh block after `<!-- quickstart:<name> -->`. */
function readmeBlock(name: string): string {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const at = readme.indexOf(`<!-- quickstart:${name} -->`);
  if (at < 0) throw new Error(`README.md has no <!-- quickstart:${name} --> block`);
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  return m![1];
}

/** Runs shell text with bash in its own process group; resolves with its output (rejects on a non-zero exit). */
function bash(script: string, env: NodeJS.ProcessEnv, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (c) => (out += c));
    p.stderr.on('data', (c) => (out += c));
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`bash exited ${code}:\n${script}\n---\n${out}`))));
  });
}

let svc: TestService;
let env: NodeJS.ProcessEnv;
let first: Run;
let guideExports: Record<string, string>;
const devRef = uniqueName('dev');
const work = mkdtempSync(join(tmpdir(), 'first-run-'));
const background: number[] = [];

beforeAll(async () => {
  // owns the control database and, at the end, removes the dev project's connector, slot and database
  svc = await startTestService({ roles: ['api'] }); // api only: no consumer of its own in the groups
  env = childEnv(svc, {
    APP_ENV: 'development',
    LOG_LEVEL: 'info',
    PORT: String(await freePort()),
    DEV_MAIL_SINK_PORT: String(await freePort()),
    DEV_PROJECT_REF: devRef,
    MASTER_KEY: svc.cfg.masterKey.toString('base64'),
  });
  delete env.RETRY_TIME_SCALE;
  first = npmStart(env);
  await ready(first);
});

afterAll(async () => {
  for (const pgid of background) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {}
  }
  if (first?.proc.exitCode === null) process.kill(-first.proc.pid!, 'SIGKILL');
  await svc?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('the first start', () => {
  it('prints the dev project, then the next steps, and not one warning or error', async () => {
    await eventually(async () => first.out.includes('Next steps'), 10_000, 'the first-run guide');
    const warnings = first.lines().filter((l) => l.level >= 40);
    expect(warnings, JSON.stringify(warnings)).toEqual([]);
    const dev = JSON.parse(first.out.split('\n').find((l) => l.startsWith('{"ref"'))!);
    expect(dev.ref).toBe(devRef);
    const exportLine = first.out.split('\n').find((l) => l.trim().startsWith('export API='))!;
    guideExports = Object.fromEntries(exportLine.trim().slice('export '.length).split(' ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    expect(guideExports).toMatchObject({ API: env.PUBLIC_URL ?? `http://127.0.0.1:${env.PORT}`, REF: devRef, OWNER_TOKEN: dev.owner_token, ANON_KEY: dev.anon_key, PROJECT_URL: dev.project_url, DB: dev.database_url });
    expect(first.out).toContain(`http://127.0.0.1:${env.PORT}/dashboard/`);
    expect(first.out).toContain(`http://127.0.0.1:${env.PORT}/dev/mail`);
    // the guide's psql lines are the README's
    const readmeWebhook = readmeBlock('webhook');
    for (const l of first.out.split('\n').filter((x) => x.trim().startsWith('psql '))) expect(readmeWebhook).toContain(l.trim());
  });

  it("README: a first webhook, as written, reaches a receiver signed", async () => {
    const receiverPort = await freePort();
    const block = readmeBlock('webhook').replaceAll('9000', String(receiverPort));
    const received = join(work, 'received.log');
    // everything but the export line (the guide's own line is used instead: the same text npm start printed)
    const script = [
      'set -m', // background jobs in process groups of their own, so the test can stop them
      ...block.split('\n').filter((l) => !l.startsWith('export ')).map((l) => (l.trim().endsWith('&') ? `${l.replace(/&\s*(#.*)?$/, '')} > ${received} 2>&1 & echo "bg $!"; sleep 1` : l)),
    ].join('\n');
    const out = await bash(script, { ...process.env, ...guideExports }, repoRoot);
    background.push(...[...out.matchAll(/^bg (\d+)$/gm)].map((m) => Number(m[1])));
    const got = await eventually(async () => readFileSync(received, 'utf8').trim() || undefined, 30_000, 'the webhook at the receiver');
    const [webhookId, body] = [got.slice(0, got.indexOf(' ')), JSON.parse(got.slice(got.indexOf(' ') + 1))];
    expect(webhookId).toMatch(/^[0-9a-f-]{36}$/);
    expect(body).toMatchObject({ type: 'INSERT', table: 'orders', schema: 'public', record: { id: 1, total: 42 } });
  });

  it('README: a first SSO sign-in, as written, ends with a session', async () => {
    const idpPort = await freePort();
    const block = readmeBlock('sso').replaceAll('9400', String(idpPort));
    const [before, after] = block.split(/^# open .*$/m);
    expect(after, 'the SSO block has a "# open …" browser step').toBeDefined();
    const state = join(work, 'sso.env');
    const shellEnv = { ...process.env, ...guideExports, DEV_IDP_PORT: String(idpPort) };
    // a person reads the IdP's banner before typing on; the script waits until it answers
    const waitIdp = `for i in $(seq 300); do curl -sf http://127.0.0.1:${idpPort}/.well-known/openid-configuration >/dev/null && break; sleep 0.2; done`;
    const part1 = ['set -m', ...before.split('\n').map((l) => (l.trim().endsWith('&') ? `${l.replace(/&\s*(#.*)?$/, '')} > ${join(work, 'idp.log')} 2>&1 & echo "bg $!"; ${waitIdp}` : l)), `declare -p VERIFIER > ${state}`].join('\n');
    const out1 = await bash(part1, shellEnv, repoRoot);
    background.push(...[...out1.matchAll(/^bg (\d+)$/gm)].map((m) => Number(m[1])));
    const urlLine = out1.split('\n').filter((l) => l.startsWith('{"url"')).at(-1);
    expect(urlLine, out1).toBeDefined();
    const url = JSON.parse(urlLine!).url as string;

    // the browser step: open the url, sign in as ann (any password), continue
    const profile = mkdtempSync(join(tmpdir(), 'first-run-chromium-'));
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: inject('chromium'),
      headless: true,
      args: CHROMIUM_ARGS,
    });
    let code: string;
    try {
      const page = await browser.newPage();
      await page.goto(url);
      await page.fill('input[name=login]', 'ann');
      await page.fill('input[name=password]', 'any');
      await page.click('button[type=submit]');
      await page.click('button[type=submit]'); // consent: "Continue"
      await page.waitForURL(/\/app\/callback\?/);
      code = (await page.textContent('#code'))!.trim();
    } finally {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    }
    const part2 = [`source ${state}`, ...after.split('\n').map((l) => (/^CODE=/.test(l.trim()) ? `CODE=${code}` : l))].join('\n');
    const out2 = await bash(part2, shellEnv, repoRoot);
    const session = JSON.parse(out2.trim().split('\n').at(-1)!);
    expect(session).toMatchObject({ token_type: 'bearer', user: { email: 'ann@example.com' } });
    expect(session.access_token).toMatch(/^ey/);
  });
});

describe('a busy port', () => {
  it('a second instance on the API port exits with one line naming it, before joining any group', async () => {
    const admin = svc.ctx.kafka.admin();
    await admin.connect();
    try {
      const group = `${svc.cfg.TOPIC_PREFIX}.dispatcher`;
      const members = async () => (await admin.describeGroups([group])).groups[0].members.length;
      expect(await members()).toBe(1);
      const second = npmStart({ ...env });
      const { code } = await second.exit;
      expect(code).toBe(2);
      // every busy port is named, each in one line with the key that moves it
      const lines = second.err.split('\n').filter((l) => l.startsWith('port '));
      expect(lines).toEqual([
        expect.stringContaining(`port ${env.PORT} on 127.0.0.1 (API, PORT) is already in use`),
        expect.stringContaining(`port ${env.DEV_MAIL_SINK_PORT} on 127.0.0.1 (development mail sink, DEV_MAIL_SINK_PORT) is already in use`),
      ]);
      expect(lines[0]).toContain(`PORT=${Number(env.PORT) + 1} npm start`);
      // nothing ran: no log line at all, no migration, no consumer
      expect(second.out).not.toContain('"level"');
      expect(await members()).toBe(1);

      const third = npmStart({ ...env, PORT: String(await freePort()), DEV_MAIL_SINK: 'false', METRICS_PORT: env.PORT });
      expect((await third.exit).code).toBe(2);
      expect(third.err).toContain(`port ${env.PORT} on 127.0.0.1 (metrics, METRICS_PORT) is already in use`);
    } finally {
      await admin.disconnect();
    }
  });
});

describe('stopping', () => {
  const groupState = async () => {
    const admin = svc.ctx.kafka.admin();
    await admin.connect();
    try {
      return (await admin.describeGroups([`${svc.cfg.TOPIC_PREFIX}.dispatcher`])).groups[0];
    } finally {
      await admin.disconnect();
    }
  };

  it('Ctrl-C (SIGINT to the process group, twice over through npm) stops cleanly and leaves the groups', async () => {
    const pid = await servicePid(first);
    process.kill(-first.proc.pid!, 'SIGINT');
    await first.exit;
    await eventually(async () => !alive(pid), 10_000, 'the service process to exit');
    const msgs = first.lines().map((l) => l.msg);
    expect(msgs).toContain('stopped');
    expect(msgs.some((m) => m.startsWith('second stop signal'))).toBe(false);
    // left, not timed out: no member remains the moment the process is gone
    const g = await groupState();
    expect(g.members).toEqual([]);
    expect(g.state).toBe('Empty');
  });

  it('SIGTERM to npm drains up to SHUTDOWN_DRAIN_TIMEOUT; a second signal exits at once; npm killed -9 takes the service with it; nothing is lost', async () => {
    // a receiver that hangs on the first two requests, then answers 200
    let calls = 0;
    const hung: http.ServerResponse[] = [];
    const bodies: string[] = [];
    const receiver = http.createServer((req, res) => {
      let b = '';
      req.on('data', (c) => (b += c)).on('end', () => {
        bodies.push(b);
        if (++calls <= 2) hung.push(res);
        else res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    try {
      const db = new pg.Client({ connectionString: guideExports.DB });
      await db.connect();
      await db.query('create table shipments (id bigserial primary key, note text)');
      await db.end();

      // 1. SIGTERM to npm (not to the group: what a supervisor or `kill <npm pid>` does), drain bound 2 s
      const b = npmStart({ ...env, SHUTDOWN_DRAIN_TIMEOUT: '2s' });
      await ready(b);
      expect(b.out).not.toContain('Next steps'); // only the first start
      const created = await svc.api(guideExports.OWNER_TOKEN, 'POST', `/v1/projects/${devRef}/webhooks`, { table: 'public.shipments', events: ['INSERT'], url: receiverUrl, timeout_ms: 60_000 });
      expect(created.status).toBe(201);
      const db2 = new pg.Client({ connectionString: guideExports.DB });
      await db2.connect();
      await db2.query(`insert into shipments (note) values ('cut off by a stop')`);
      await db2.end();
      await eventually(async () => calls === 1, 30_000, 'the first attempt at the receiver');
      const pidB = await servicePid(b);
      process.kill(b.proc.pid!, 'SIGTERM');
      // npm exits as soon as it has passed the signal on; the service after its drain
      await eventually(async () => b.lines().some((l) => l.msg === 'stopped'), 30_000, 'the service to stop');
      // 'stopped' is its last line before process.exit: gone a moment later (CI once read the line
      // before the exit had finished, on a machine at a quarter of its usual pace)
      await eventually(async () => !alive(pidB), 10_000, 'the service process to exit after its last line');
      expect(b.lines().map((l) => l.msg)).toContain('stopping with attempts still in flight; they will be made again by the next owner');
      expect((await groupState()).members).toEqual([]);

      // 2. the next start makes the cut-off attempt again; it hangs too; SIGTERM, then SIGTERM again
      const c = npmStart({ ...env, SHUTDOWN_DRAIN_TIMEOUT: '60s' });
      await ready(c);
      await eventually(async () => calls === 2, 30_000, 'the attempt made again by the next start');
      const pidC = await servicePid(c);
      process.kill(pidC, 'SIGTERM');
      await eventually(async () => c.lines().some((l) => String(l.msg).startsWith('shutting down')), 10_000, 'shutting down');
      await new Promise((r) => setTimeout(r, 700)); // a separate signal, not the echo of the first
      process.kill(pidC, 'SIGTERM');
      await eventually(async () => !alive(pidC), 10_000, 'the service to exit at the second signal'); // the drain allows 60 s
      await c.exit;
      expect(c.lines().some((l) => String(l.msg).startsWith('second stop signal'))).toBe(true);
      expect(c.lines().map((l) => l.msg)).not.toContain('stopped');

      // 3. the next start delivers it (nothing lost); then npm is killed -9 and the service follows it
      const d = npmStart(env);
      await ready(d);
      await eventually(async () => calls >= 3, 60_000, 'the delivery after two cut-off attempts');
      expect(JSON.parse(bodies.at(-1)!)).toMatchObject({ table: 'shipments', record: { note: 'cut off by a stop' } });
      const pidD = await servicePid(d);
      process.kill(d.proc.pid!, 'SIGKILL');
      await eventually(async () => !alive(pidD), 30_000, 'the orphaned service to stop');
      await eventually(async () => d.lines().some((l) => l.msg === 'stopped'), 5_000, "the orphan's clean stop");
      expect(d.lines().find((l) => String(l.msg).startsWith('shutting down'))).toMatchObject({ signal: 'parent exited' });
    } finally {
      for (const res of hung) res.destroy();
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
    }
  });
});
