// What the benchmark runs against: the stack (the configured external one, or the local one
// brought up with stackUp), a fresh control database, the service as a child process with its own
// topic prefix, and a project created with the admin command, exactly as an operator would.
// Everything it creates is recorded in `created` and removed by teardown(), even after a failure.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { Kafka, logLevel } from 'kafkajs';
import { loadConfig, repoRoot } from '../src/config.js';
import { stackUp } from '../src/stack/index.js';
import { ConnectClient, topicNames } from '../src/kafka/index.js';
import { connectorName, disableOutbox, slotName } from '../src/outbox/index.js';
import { projectDatabaseName, projectRoleName } from '../src/projects/index.js';

export interface Stack {
  adminDatabaseUrl: string;
  kafkaBrokers: string[];
  connectUrl: string;
  /** pid files of the local stack's processes; null on an external stack */
  runDir: string | null;
}

export interface Project {
  ref: string;
  ownerToken: string;
  databaseUrl: string;
}

export async function resolveStack(log: (l: string) => void): Promise<Stack> {
  const { DATABASE_URL, KAFKA_BROKERS, KAFKA_CONNECT_URL } = process.env;
  if (DATABASE_URL && KAFKA_BROKERS && KAFKA_CONNECT_URL) {
    const admin = new URL(DATABASE_URL);
    admin.pathname = '/postgres';
    return { adminDatabaseUrl: admin.toString(), kafkaBrokers: KAFKA_BROKERS.split(',').map((s) => s.trim()), connectUrl: KAFKA_CONNECT_URL, runDir: null };
  }
  const cfg = loadConfig();
  const e = await stackUp(cfg, log);
  return { adminDatabaseUrl: e.adminDatabaseUrl, kafkaBrokers: e.kafkaBrokers, connectUrl: e.connectUrl, runDir: path.join(cfg.STACK_DIR, 'run') };
}

export const dbUrl = (stack: Stack, name: string) => {
  const u = new URL(stack.adminDatabaseUrl);
  u.pathname = `/${name}`;
  return u.toString();
};

async function adminQuery(stack: Stack, sql: string, url = stack.adminDatabaseUrl) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One service instance (API + dispatcher + projector) and the resources made for it. */
export class BenchService {
  readonly id = randomBytes(4).toString('hex');
  readonly topicPrefix = `bench${this.id}`;
  readonly controlDb = `bench_ctl_${this.id}`;
  child: ChildProcess | null = null;
  /** how the service ended; an exit we did not ask for makes every later delivery figure void */
  exit: { code: number | null; signal: NodeJS.Signals | null; at: string; expected: boolean } | null = null;
  onUnexpectedExit: (e: NonNullable<BenchService['exit']>) => void = () => {};
  private stopping = false;
  url = '';
  project: Project | null = null;
  /** idle projects made with idleProjects(): their refs start with this */
  idlePrefix: string | null = null;
  private env: NodeJS.ProcessEnv = {};

  constructor(
    private readonly stack: Stack,
    private readonly logFile: string,
    private readonly extraEnv: Record<string, string>,
    /** node's arguments: npm start's flags, extra ones (e.g. --cpu-prof), then its entry point (run.ts) */
    private readonly nodeArgs: string[],
  ) {}

  async start(): Promise<void> {
    await adminQuery(this.stack, `create database ${this.controlDb}`);
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    this.env = {
      ...process.env,
      APP_ENV: 'development',
      DATABASE_URL: dbUrl(this.stack, this.controlDb),
      KAFKA_BROKERS: this.stack.kafkaBrokers.join(','),
      KAFKA_CONNECT_URL: this.stack.connectUrl,
      HOST: '127.0.0.1',
      PORT: String(port),
      TOPIC_PREFIX: this.topicPrefix,
      DEV_BOOTSTRAP: 'false',
      DEV_MAIL_SINK: 'false',
      OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
      LOG_LEVEL: 'warn',
      ...this.extraEnv,
    };
    const fd = openSync(this.logFile, 'a');
    // node itself, not npm: we must sample the service's own pid
    this.child = spawn(process.execPath, this.nodeArgs, { cwd: repoRoot, env: this.env, stdio: ['ignore', fd, fd] });
    this.child.once('exit', (code, signal) => {
      this.exit = { code, signal, at: new Date().toISOString(), expected: this.stopping };
      if (!this.stopping) this.onUnexpectedExit(this.exit);
    });
    const exited = new Promise<never>((_, reject) => this.child!.once('exit', (code) => reject(new Error(`the service exited with code ${code} during start; see ${this.logFile}:\n${tail(this.logFile)}`))));
    exited.catch(() => {});
    await Promise.race([exited, this.waitListening(120_000)]);
  }

  private async waitListening(timeoutMs: number) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(5000) });
        return;
      } catch {
        await sleep(300);
      }
    }
    throw new Error(`the service did not listen within ${timeoutMs / 1000}s; see ${this.logFile}`);
  }

  /** `npm run admin -- create-project` with the service's environment; its last line is JSON. */
  async createProject(): Promise<Project> {
    const ref = `bench-${this.id}`;
    const out = await new Promise<string>((resolve, reject) => {
      const p = spawn(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', 'create-project', `--ref=${ref}`, '--plan=free'], { cwd: repoRoot, env: this.env });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.once('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`create-project failed (${code}): ${stderr.trim()}`))));
    });
    const j = JSON.parse(out.trim().split('\n').pop()!);
    // the admin login, not the owner's app_<ref> role create-project gives (src/projects/managed-database.ts):
    // the bench also drops the slot, checkpoints and vacuums there, as every run before 2026-11-29 did
    this.project = { ref: j.ref, ownerToken: j.owner_token, databaseUrl: dbUrl(this.stack, projectDatabaseName(j.ref)) };
    return this.project;
  }

  /**
   * Creates `count` idle projects of this service (bench/idle-projects.ts, with the service's
   * environment), `batch` at a time, each left once the supervisor has stopped its connector.
   */
  async idleProjects(count: number, batch: number, log: (l: string) => void): Promise<void> {
    this.idlePrefix = `idle-${this.id}`;
    await this.script(['bench/idle-projects.ts', 'create', this.idlePrefix, String(count), String(batch)], (line) => {
      const j = JSON.parse(line);
      log(`  … ${j.created}/${count} idle projects (a batch of ${j.batch} enabled and stopped in ${j.seconds} s)`);
    });
  }

  /** How many of this service's connectors the supervisor has stopped as idle now. */
  async idleConnectors(): Promise<number> {
    const c = new pg.Client({ connectionString: dbUrl(this.stack, this.controlDb) });
    await c.connect();
    try {
      return (await c.query(`select count(*)::int as n from connector_supervision where state = 'idle'`)).rows[0].n;
    } finally {
      await c.end();
    }
  }

  /** Runs a script under node --import tsx with the service's environment; stdout lines to onLine. */
  private script(args: string[], onLine: (line: string) => void = () => {}): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const p = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: repoRoot, env: { ...this.env, LOG_LEVEL: 'warn' } });
      let buf = '';
      let stderr = '';
      p.stdout.on('data', (d) => {
        buf += d;
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (line) onLine(line);
        }
      });
      p.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
      p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(' ')} failed (${code}): ${stderr.trim()}`))));
    });
  }

  async api(method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(`${this.url}${p}`, {
      method,
      headers: { authorization: `Bearer ${this.project!.ownerToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(120_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  /**
   * For experiments only: merges settings (e.g. {"poll.interval.ms": "10"}) into this project's
   * Debezium connector through Connect's REST API and waits for it to run again.
   */
  async overrideConnector(overrides: Record<string, string>): Promise<void> {
    const name = connectorName(this.project!.ref, this.topicPrefix);
    const res = await fetch(`${this.stack.connectUrl}/connectors/${encodeURIComponent(name)}/config`);
    if (!res.ok) throw new Error(`reading connector ${name} answered ${res.status}`);
    const connect = new ConnectClient(this.stack.connectUrl);
    await connect.upsert(name, { ...((await res.json()) as Record<string, string>), ...overrides });
    await connect.waitRunning(name);
  }

  /** SIGTERM and wait for a clean exit (the service finishes in-flight work within 30 s). */
  /** Stops the service and starts it again on the same control database with `env` added. */
  async restart(env: Record<string, string>): Promise<void> {
    await this.stop();
    this.stopping = false;
    this.exit = null;
    this.env = { ...this.env, ...env };
    const fd = openSync(this.logFile, 'a');
    this.child = spawn(process.execPath, this.nodeArgs, { cwd: repoRoot, env: this.env, stdio: ['ignore', fd, fd] });
    this.child.once('exit', (code, signal) => {
      this.exit = { code, signal, at: new Date().toISOString(), expected: this.stopping };
      if (!this.stopping) this.onUnexpectedExit(this.exit);
    });
    await this.waitListening(120_000);
  }

  /** The database URLs of the projects idleProjects() made. */
  idleProjectUrls(count: number): string[] {
    if (!this.idlePrefix) return [];
    return Array.from({ length: count }, (_, i) => dbUrl(this.stack, projectDatabaseName(`${this.idlePrefix}-${i}`)));
  }

  /** The idle projects' connectors by supervised state and speed ("running/slow": 97, …). */
  async captureStates(): Promise<Record<string, number>> {
    const c = new pg.Client({ connectionString: dbUrl(this.stack, this.controlDb) });
    await c.connect();
    try {
      const r = await c.query(`select state || '/' || capture_speed as k, count(*)::int as n from connector_supervision where project_ref like $1 || '-%' group by 1 order by 1`, [this.idlePrefix]);
      return Object.fromEntries(r.rows.map((x) => [x.k, x.n]));
    } finally {
      await c.end();
    }
  }

  async stop(): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    this.stopping = true;
    child.kill('SIGTERM');
    const code = await Promise.race([exited, sleep(35_000).then(() => 'timeout' as const)]);
    if (code === 'timeout') {
      child.kill('SIGKILL');
      return exited;
    }
    return code;
  }

  /** Connector (and with it the replication slot), topics, groups and databases: all of it goes. */
  async teardown(log: (l: string) => void): Promise<void> {
    const step = async (what: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
      } catch (e) {
        log(`cleanup: ${what} failed: ${(e as Error).message}`);
      }
    };
    await step('stopping the service', () => this.stop());
    if (this.idlePrefix) {
      const prefix = this.idlePrefix;
      await step('removing the idle projects (connectors, slots, databases)', () => this.script(['bench/idle-projects.ts', 'drop', prefix]));
    }
    if (this.project) {
      const p = this.project;
      const topics = topicNames(this.topicPrefix, []);
      const env = { connect: new ConnectClient(this.stack.connectUrl), topicPrefix: this.topicPrefix, outboxTopic: topics.outbox };
      // Connect is shared and sometimes restarting: give it two minutes before giving up on it
      await step('removing the connector and its slot', async () => {
        for (let i = 0; !(await env.connect.health()) && i < 60; i++) await sleep(2000);
        await disableOutbox(env, p.ref, p.databaseUrl);
      });
      const name = new URL(p.databaseUrl).pathname.slice(1);
      // without Connect the slot may still be there, and a database with a slot cannot be dropped
      // (a logical slot is dropped from its own database)
      const slot = pg.escapeLiteral(slotName(p.ref, this.topicPrefix));
      await step('dropping a leftover replication slot', async () => {
        await adminQuery(this.stack, `select pg_terminate_backend(active_pid) from pg_replication_slots where slot_name = ${slot} and active_pid is not null`);
        await adminQuery(this.stack, `select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = ${slot}`, p.databaseUrl);
      });
      await step(`dropping ${name}`, () => adminQuery(this.stack, `drop database if exists ${pg.escapeIdentifier(name)} with (force)`));
      await step('dropping its role', () => adminQuery(this.stack, `drop role if exists ${pg.escapeIdentifier(projectRoleName(p.ref))}`));
    }
    await step(`dropping ${this.controlDb}`, () => adminQuery(this.stack, `drop database if exists ${this.controlDb} with (force)`));
    await step('deleting topics and consumer groups', async () => {
      const admin = new Kafka({ brokers: this.stack.kafkaBrokers, clientId: 'bench-cleanup', logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        const mine = (await admin.listTopics()).filter((t) => t.includes(this.topicPrefix));
        if (mine.length) await admin.deleteTopics({ topics: mine });
        const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.includes(this.topicPrefix));
        // a group whose last member is still leaving refuses deletion: retry briefly
        for (let i = 0; groups.length && i < 5; i++) {
          try {
            await admin.deleteGroups(groups);
            break;
          } catch (e) {
            const failed = ((e as { groups?: { groupId: string; errorCode: number }[] }).groups ?? []).filter((g) => g.errorCode && g.errorCode !== 69);
            if (failed.length === 0) break;
            if (i === 4) throw new Error(`groups ${failed.map((g) => `${g.groupId} (error ${g.errorCode})`).join(', ')}`);
            await sleep(2000);
          }
        }
      } finally {
        await admin.disconnect();
      }
    });
  }
}

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
