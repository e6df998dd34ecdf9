// A real instance of the service for one test file: its own control database, its own topic
// prefix (so its own topics and consumer groups), listening on a free loopback port, on the shared
// stack started by the global setup. Roles are chosen per test (api only, or api + workers).
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { closeContext, createContext } from '../../src/create-context.js';
import type { AppContext } from '../../src/context.js';
import { buildServer } from '../../src/http/server.js';
import { healthReport } from '../../src/http/health.js';
import { startMetricsServer, type MetricsServer } from '../../src/lib/metrics.js';
import { accessVerifiers, registerRoutes } from '../../src/routes.js';
import { createLogger } from '../../src/lib/logger.js';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { createProject, issueOwnerToken, projectDatabaseName, projectRoleName, type Plan } from '../../src/projects/projects.js';
import { createDatabase, dbUrl, dropDatabase, readResponse, sql, stack, uniqueName } from './env.js';

export interface TestProject {
  ref: string;
  ownerToken: string;
  ownerId: string;
  anonKey: string;
  projectUrl: string;
  /** the project database as the cluster's admin (what the tests set up with; the service's login) */
  databaseUrl: string;
  /** the project database as the owner's own role, app_<ref>, as create-project gives it */
  appDatabaseUrl: string;
}

export interface ApiResponse {
  status: number;
  body: any;
  headers: Headers;
}

export interface TestService {
  url: string;
  /** name of its control database */
  controlDb: string;
  ctx: AppContext;
  cfg: Config;
  app: FastifyInstance;
  workers: Worker[];
  /** a new project (and owner, unless ownerEmail repeats) on this service */
  project(plan?: Plan, opts?: { ownerEmail?: string; siteUrl?: string; redirectUrls?: string[] }): Promise<TestProject>;
  /** fetch against this service with an owner token */
  api(token: string | null, method: string, path: string, body?: unknown): Promise<ApiResponse>;
  /** GET /health on the metrics port (started on first use, as METRICS_PORT does): the whole report, per project */
  detailedHealth(): Promise<ApiResponse>;
  /** p's owner calls the Management API at `/v1/projects/{p.ref}{path}`; a status ≥ 300 throws, with the body */
  manage(p: TestProject, method: string, path: string, body?: unknown): Promise<ApiResponse>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface TestServiceOptions {
  roles?: string[];
  env?: Record<string, string>;
  /** run on this existing control database (of an earlier service of the same file) */
  controlDb?: string;
  /** stop() leaves the control database, the projects' databases and connectors for a later service */
  keep?: boolean;
}

export async function startTestService(opts: TestServiceOptions = {}): Promise<TestService> {
  const controlDb = opts.controlDb ?? uniqueName('ctl_');
  const controlUrl = opts.controlDb ? dbUrl(controlDb) : await createDatabase(controlDb);
  const port = await freePort();
  const s = stack();
  const cfg = loadConfig({
    APP_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: String(port),
    TOPIC_PREFIX: uniqueName('t'),
    OUTBOX_PARTITIONS: '3',
    ROLES: (opts.roles ?? ['api']).join(','),
    OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8,::1/128',
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k === 'STACK_DIR' || k === 'MASTER_KEY')),
    ...opts.env,
  } as NodeJS.ProcessEnv);
  const log = createLogger(cfg.LOG_LEVEL);
  const ctx = await createContext(cfg, log, { databaseUrl: controlUrl, adminDatabaseUrl: s.adminDatabaseUrl, kafkaBrokers: s.kafkaBrokers, connectUrl: s.connectUrl });
  const app = await buildServer({ logger: log, publicUrl: cfg.publicUrl, trustProxy: cfg.TRUST_PROXY, access: accessVerifiers(ctx) });
  await registerRoutes(app, ctx);
  await app.listen({ host: '127.0.0.1', port });
  const workers = await startWorkers(ctx, cfg.ROLES);
  const url = cfg.publicUrl;
  let metrics: Promise<MetricsServer> | undefined;
  const api: TestService['api'] = async (token, method, path, body) => {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    return readResponse(await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
  };

  return {
    url,
    controlDb,
    ctx,
    cfg,
    app,
    workers,
    async project(plan = 'enterprise', o = {}) {
      const ref = uniqueName('p');
      const p = await createProject(ctx, { ref, plan, ownerEmail: o.ownerEmail ?? `${ref}@owners.test`, siteUrl: o.siteUrl, redirectUrls: o.redirectUrls });
      const { token } = await issueOwnerToken(ctx, p.owner_id);
      return { ref, ownerToken: token, ownerId: p.owner_id, anonKey: p.anon_key, projectUrl: p.project_url, databaseUrl: dbUrl(projectDatabaseName(ref)), appDatabaseUrl: p.database_url };
    },
    api,
    async detailedHealth() {
      metrics ??= startMetricsServer('127.0.0.1', 0, () => healthReport(ctx));
      return readResponse(await fetch(`http://127.0.0.1:${(await metrics).port}/health`));
    },
    async manage(p, method, path, body) {
      const r = await api(p.ownerToken, method, `/v1/projects/${p.ref}${path}`, body);
      if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r;
    },
    async stop() {
      await app.close();
      if (metrics) await (await metrics).close();
      await Promise.all(workers.map((w) => w.stop()));
      if (opts.keep) return closeContext(ctx);
      // connectors of this file's projects must go, or their slots would pin WAL
      const { disableProjectOutbox } = await import('../../src/outbox/service.js');
      const enabled = await ctx.db.query('select ref from projects where outbox_enabled_at is not null');
      for (const r of enabled.rows) {
        // said, not swallowed: a connector left behind keeps its slot, and the slot its database
        await disableProjectOutbox(ctx, r.ref).catch((err) => console.warn(`test cleanup: the outbox of ${r.ref} could not be removed (${(err as Error).message}); its connector, slot and database are left`));
      }
      const refs = (await ctx.db.query('select ref from projects where managed_database')).rows.map((r) => String(r.ref));
      await deleteKafkaState(ctx, cfg.TOPIC_PREFIX);
      await closeContext(ctx);
      for (const ref of refs) {
        await dropDatabase(projectDatabaseName(ref)).catch(() => {});
        await sql(stack().adminDatabaseUrl, `drop role if exists ${projectRoleName(ref)}`).catch(() => {});
      }
      await dropDatabase(controlDb).catch(() => {});
    },
  };
}

/**
 * Deletes this service's topics (its own, and the Debezium heartbeat topics of its connectors) and
 * consumer groups. Without it the shared development broker gains ~700 partitions per full run,
 * and a broker with ~15,000 partitions takes minutes to start. Best effort, bounded: a cleanup
 * that fails or hangs is reported, never fails the file.
 */
async function deleteKafkaState(ctx: TestService['ctx'], prefix: string): Promise<void> {
  const admin = ctx.kafka.admin();
  const work = (async () => {
    await admin.connect();
    try {
      const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${prefix}.`) || t.startsWith(`__debezium-heartbeat.outbox.${prefix}.`));
      if (topics.length) await admin.deleteTopics({ topics, timeout: 10_000 });
      const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(`${prefix}.`));
      if (groups.length) await admin.deleteGroups(groups).catch(() => {});
    } finally {
      await admin.disconnect();
    }
  })();
  const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000).unref());
  const out = await Promise.race([work.then(() => 'ok' as const), timeout]).catch((err: Error) => err.message);
  if (out !== 'ok') console.warn(`test cleanup: the Kafka topics of ${prefix} were not all deleted (${out})`);
}
