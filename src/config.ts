// One validated, frozen configuration, read once at start. Every key is listed with its default in
// .env.example and in docs/configuration.md (linked from the README); a bad value stops the
// process with a message naming the key. Secret-bearing keys are redacted whenever it is printed.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { PROJECT_REF } from './lib/project-ref.js';

/**
 * The checkout's root: the nearest directory above this module that holds package.json. The module
 * is src/config.ts under tsx (tests, scripts) and dist/src/config.js under `npm start`.
 */
export const repoRoot = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(here, '..');
  }
})();

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const port = z.coerce.number().int().min(1).max(65535);
const csv = z.string().transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean));

/** Durations: "30s", "2m", "1h", "500ms" or a plain number of milliseconds. */
export function parseDuration(input: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(input.trim());
  if (!m) throw new Error(`not a duration: "${input}" (use 500ms, 30s, 2m, 1h)`);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] ?? 'ms']!;
  return Math.round(n * unit);
}
const duration = z.string().transform((s, ctx) => {
  try {
    return parseDuration(s);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: (e as Error).message });
    return z.NEVER;
  }
});

/** "<max>/<window>" (e.g. 30/5m), or "off": a rate limit per client. */
export interface RateLimit {
  max: number;
  windowMs: number;
}
const rateLimit = z.string().transform((s, ctx): RateLimit | null => {
  if (s.trim() === 'off') return null;
  const m = /^\s*(\d{1,7})\s*\/\s*(\S+)\s*$/.exec(s);
  try {
    if (!m || Number(m[1]) < 1) throw new Error('use <max>/<window> such as 30/5m, or off');
    const windowMs = parseDuration(m[2]);
    if (windowMs < 1000) throw new Error('the window must be at least 1s');
    return { max: Number(m[1]), windowMs };
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: (e as Error).message });
    return z.NEVER;
  }
});

const bytes = z.string().transform((s, ctx) => {
  const m = /^\s*(\d+)\s*(B|kB|KB|MB|GB|TB)?\s*$/.exec(s);
  if (!m) {
    ctx.addIssue({ code: 'custom', message: 'a size such as 1073741824, 512MB or 1GB' });
    return z.NEVER;
  }
  const unit = { B: 1, kB: 1024, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 }[(m[2] ?? 'B') as 'B'];
  return Number(m[1]) * unit;
});

const schema = z.object({
  APP_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * `auto`: readable coloured lines when stdout is a terminal, one JSON object per line otherwise
   * (files, pipes, log collectors); `json` or `pretty` force one or the other.
   */
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  /**
   * On SIGTERM/SIGINT: how long in-flight deliveries may take to finish before the consumers commit
   * what is done and leave their groups anyway (what is cut off is attempted again by the next owner).
   */
  SHUTDOWN_DRAIN_TIMEOUT: duration.prefault('10s'),
  /** At start, how long to wait for the control database and Kafka when they are unavailable, before exiting 1. */
  STARTUP_WAIT: duration.prefault('5m'),
  HOST: z.string().default('127.0.0.1'),
  PORT: port.default(8000),
  /**
   * Which proxies' X-Forwarded-For to believe for the client IP (rate limits, logs): Fastify's
   * trustProxy: "true", "false", a hop count, or comma-separated addresses/CIDRs/ranges. The default
   * trusts only loopback (a proxy on the same host): trusting whole private ranges would let a client
   * behind a forwarding-only balancer (NodePort, NAT) write its own address. Name your proxies.
   */
  TRUST_PROXY: z.string().default('loopback'),
  /** Prometheus metrics (GET /metrics) on a port of their own; unset: off. */
  METRICS_PORT: port.optional(),
  METRICS_HOST: z.string().default('127.0.0.1'),
  /** Base URL the outside world reaches the API on; project_url, callback and ACS URLs derive from it. */
  PUBLIC_URL: z.string().url().optional(),
  /** Which roles this process runs (svix-style): api, dispatcher, projector. */
  ROLES: csv.default(['api', 'dispatcher', 'projector']),

  // External stack. When all three are set, nothing is provisioned locally.
  DATABASE_URL: z.string().optional(),
  KAFKA_BROKERS: csv.optional(),
  KAFKA_CONNECT_URL: z.string().url().optional(),
  /** Host and port Debezium (inside Kafka Connect) uses to reach Postgres; defaults to the control DB's. */
  DEBEZIUM_DATABASE_HOST: z.string().optional(),
  DEBEZIUM_DATABASE_PORT: port.optional(),

  // Local stack (used when the external stack is not configured).
  STACK_DIR: z.string().default(path.join(repoRoot, '.stack')),
  STACK_PG_PORT: port.default(54329),
  STACK_KAFKA_PORT: port.default(19092),
  STACK_KAFKA_CONTROLLER_PORT: port.default(19093),
  STACK_CONNECT_PORT: port.default(18083),
  STACK_KAFKA_HEAP: z.string().default('512m'),
  STACK_CONNECT_HEAP: z.string().default('512m'),

  /** 32 bytes, base64: encrypts secrets, client secrets, SMTP passwords, signing secrets, JWT keys. */
  MASTER_KEY: z.string().optional(),
  /** Comma-separated earlier master keys, decrypt-only, while `npm run admin -- reseal` moves values to MASTER_KEY. */
  MASTER_KEY_PREVIOUS: z.string().optional(),

  // Kafka layout.
  TOPIC_PREFIX: z
    .string()
    .regex(/^[a-zA-Z0-9._-]{1,100}$/)
    .default('integrations'),
  OUTBOX_PARTITIONS: z.coerce.number().int().min(1).max(1000).default(6),
  KAFKA_CLIENT_ID: z.string().default('integrations-service'),

  // Delivery.
  RETRY_DELAYS: z.string().default('30s,2m,10m,30m,1h,3h,6h'),
  /** Multiplies every retry delay and the 24 h age limit; tests scale time down with it. */
  RETRY_TIME_SCALE: z.coerce.number().positive().max(1).default(1),
  MAX_ATTEMPTS: z.coerce.number().int().min(1).max(8).default(8),
  MAX_MESSAGE_AGE: duration.prefault('24h'),
  DISPATCH_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(256),
  /**
   * A project's share of DISPATCH_CONCURRENCY (delivery/endpoints/project-share.ts): over it, a
   * project starts attempts only while more than this many slots are free. 0: off (the default:
   * on, with a quarter, a lone busy project's throughput halved in the e2e A / B of 2026-11-29).
   */
  DISPATCH_PROJECT_SHARE: z.coerce.number().int().min(0).max(10_000).default(0),
  WEBHOOK_TIMEOUT_DEFAULT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** CIDRs outbound requests may reach although private; empty in production. */
  OUTBOUND_ALLOW_CIDRS: csv.optional(),
  SIGNING_SECRET_GRACE: duration.prefault('24h'),
  RESPONSE_BODY_LIMIT: z.coerce.number().int().min(0).max(65536).default(4096),
  /** How long the dispatcher caches webhook configuration and secret values read at send time. */
  DELIVERY_CONFIG_TTL: duration.prefault('1s'),
  /** How often the dispatcher commits outbox offsets whose outcomes are recorded. */
  DISPATCH_COMMIT_INTERVAL: duration.prefault('1s'),
  /**
   * How long delivery_ledger rows (and finished callback rows) are kept. A record can be read again
   * only while its topic keeps it (outbox and retry topics: 7 days), so at least 8 days.
   */
  LEDGER_RETENTION: duration.prefault('8d'),
  /** How often a dispatcher process deletes ledger and callback rows past LEDGER_RETENTION. */
  HOUSEKEEPING_INTERVAL: duration.prefault('1h'),
  /**
   * Session timeout of every consumer group member (dispatcher, retry, projector, callbacks): how
   * long before a process that died without leaving (kill -9, power loss) has its partitions moved
   * to another. Heartbeats go every sixth of it (at most every second). The broker refuses values
   * under its group.min.session.timeout.ms (6s by default).
   */
  DISPATCH_SESSION_TIMEOUT: duration.prefault('6s'),
  /** How often the connector supervisor (one process at a time) reads every connector's state from Kafka Connect. */
  CONNECTOR_SUPERVISE_INTERVAL: duration.prefault('5s'),
  /** Longest wait between restarts of a connector that keeps failing while its database is reachable (doubling from 5s). */
  CONNECTOR_RESTART_BACKOFF_MAX: duration.prefault('10m'),
  /** Consecutive restarts after which a connector is reported as failing (error log, /health) while restarts go on at the backoff. */
  CONNECTOR_RESTART_REPORT_AFTER: z.coerce.number().int().min(1).max(1000).default(5),
  /**
   * A project with no outbox message for this long has its connector stopped (no task, no
   * replication connection: an idle project costs nothing); it resumes at the first write to its
   * database. 0 keeps every connector running.
   */
  CAPTURE_IDLE_AFTER: duration.prefault('10m'),
  /** How often the databases of stopped (idle) projects are checked for writes, one query per cluster. */
  CAPTURE_WAKE_INTERVAL: duration.prefault('100ms'),
  /** A stopped connector is resumed at least this often, so its slot advances (and releases WAL) even with no write. */
  CAPTURE_IDLE_REFRESH: duration.prefault('30m'),
  /**
   * How long a connector resumed by CAPTURE_IDLE_REFRESH (not by a write) runs before it may be
   * stopped again: long enough to start and confirm its slot's position, short enough that the
   * refresh costs a quiet project little (it would otherwise run a whole CAPTURE_IDLE_AFTER).
   */
  CAPTURE_REFRESH_RUN: duration.prefault('30s'),
  /**
   * A stopped connector's slot is advanced (idle capture, step 6) as soon as it retains more WAL
   * than this (bytes; suffixes kB, MB, GB), or is this close to max_slot_wal_keep_size: another
   * database's writes on the same cluster (a bulk load, a backfill) must not get an idle project's
   * slot invalidated. It also bounds the wake: a resumed task decodes what its slot holds before the
   * first new message, twice when it has an offset stored (Debezium's search for its resume position,
   * then the stream), about 1.8 ms per MB each on the development machine: 512 MB cost a wake up to
   * two seconds more.
   */
  CAPTURE_IDLE_MAX_WAL: bytes.prefault('64MB'),
  /**
   * While a database cluster writes less WAL than this in 30 s (quiet), its idle slots are advanced
   * as soon as they hold more than this (over their floor: what a transaction held open in the
   * cluster keeps; idle capture, step 7: quiet-cluster.ts), so a wake has almost nothing to decode.
   * 0 turns it off (step 6 only).
   */
  CAPTURE_IDLE_QUIET_WAL: bytes.prefault('1MB'),
  /**
   * A running connector whose project sent at most CAPTURE_SLOW_AT messages in the last
   * CAPTURE_SPEED_WINDOW (and that has run that long) reads its replication stream this often
   * instead of every 10 ms: a project that sends now and then costs a few ms of CPU a second instead
   * of ~35-90 of Connect alone, its messages wait up to this long to be captured (500 ms: the
   * sparse bench's wake p99 ~1.0 s and 3.8 ms/s per project; 1 s: 1.5 s and 2.9 ms/s; measured
   * again 2026-11-28: 847 ms and 3.92 against 1,458 ms and 3.06, docs/benchmark.md). At CAPTURE_FAST_AT
   * messages in the window it reads every 10 ms again. 0 keeps every connector fast.
   */
  CAPTURE_SLOW_POLL: duration.prefault('500ms'),
  CAPTURE_SPEED_WINDOW: duration.prefault('60s'),
  CAPTURE_SLOW_AT: z.coerce.number().int().min(0).max(1_000_000).default(2),
  CAPTURE_FAST_AT: z.coerce.number().int().min(1).max(1_000_000).default(6),
  /**
   * How long enabling an outbox waits to create its replication slot. PostgreSQL creates a logical
   * slot only after every transaction holding a transaction id in the cluster (any database) has
   * ended; past this the enable answers 503 outbox_unavailable saying so, and logs which sessions it
   * waited on. 0 waits without limit. At most 1h: PostgreSQL's statement_timeout takes no more than
   * 2^31 ms, and a request held longer than that has been given up by every client anyway.
   */
  OUTBOX_SLOT_WAIT: duration.pipe(z.number().max(3_600_000, 'at most 1h (0 waits without limit)')).prefault('30s'),
  /** WAL a replication slot may retain before /health and the logs warn (bytes; suffixes kB, MB, GB). */
  SLOT_RETAINED_WAL_WARN: bytes.prefault('1GB'),
  /**
   * Circuit breaker per endpoint (a webhook, or a target host of base.http_request): it opens when,
   * within one CIRCUIT_WINDOW, at least CIRCUIT_FAILURE_THRESHOLD attempts failed for the endpoint's
   * fault (5xx, 408, 429, timeout, network error) and they were at least CIRCUIT_FAILURE_RATIO of
   * the attempts. Open, it sends nothing and holds the endpoint's messages; a single probe goes
   * after CIRCUIT_COOLDOWN (doubling per failed probe up to CIRCUIT_COOLDOWN_MAX), and when one
   * succeeds the held messages are released at CIRCUIT_RELEASE_RATE per second. Threshold 0: no
   * circuit ever opens (per-webhook rate limits still apply).
   */
  CIRCUIT_FAILURE_THRESHOLD: z.coerce.number().int().min(0).max(100_000).default(10),
  CIRCUIT_FAILURE_RATIO: z.coerce.number().min(0).max(1).default(0.5),
  CIRCUIT_WINDOW: duration.prefault('60s'),
  CIRCUIT_COOLDOWN: duration.prefault('30s'),
  CIRCUIT_COOLDOWN_MAX: duration.prefault('10m'),
  CIRCUIT_RELEASE_RATE: z.coerce.number().int().min(1).max(10_000).default(50),
  /**
   * An endpoint whose circuit has stayed open this long (every probe failing) is given up on: a
   * webhook is disabled and its owner emailed; held messages of a host end dead. 0: never.
   */
  ENDPOINT_DISABLE_AFTER: duration.prefault('5d'),
  /**
   * Slow start (endpoints/window.ts): attempts in flight per endpoint in this process start at
   * ENDPOINT_WINDOW_INITIAL, grow while the endpoint answers (up to ENDPOINT_WINDOW_MAX and a
   * webhook's max_in_flight), halve on its faults, and pause after CIRCUIT_FAILURE_THRESHOLD faults
   * in a row. ENDPOINT_WINDOW_MAX 0: no adaptive window (max_in_flight still applies). At most
   * ENDPOINT_WINDOW_QUEUE messages wait per endpoint; later ones are held.
   */
  ENDPOINT_WINDOW_INITIAL: z.coerce.number().int().min(1).max(10_000).default(4),
  ENDPOINT_WINDOW_MAX: z.coerce.number().int().min(0).max(100_000).default(1000),
  ENDPOINT_WINDOW_QUEUE: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  /**
   * Backfills (src/outbox/backfill.ts): rows a second when the request names no rate (a ceiling:
   * see BACKFILL_MAX_LAG), and rows enqueued per transaction at most (each transaction holds a
   * share lock on its rows).
   */
  BACKFILL_RATE: z.coerce.number().int().min(1).max(10_000).default(500),
  BACKFILL_CHUNK: z.coerce.number().int().min(1).max(10_000).default(500),
  /** A backfill waits while the dispatchers are more than this many outbox records behind. */
  BACKFILL_MAX_LAG: z.coerce.number().int().min(0).max(10_000_000).default(5000),
  /** Callbacks (callback_function): statement timeout of one call, calls per final outcome, first delay between calls (doubling, × RETRY_TIME_SCALE). */
  CALLBACK_TIMEOUT: duration.prefault('5s'),
  CALLBACK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  CALLBACK_RETRY_DELAY: duration.prefault('30s'),

  // Email.
  /** Platform default SMTP, smtp://user:pass@host:port; unset in development means the mail sink. */
  SMTP_URL: z.string().regex(/^smtps?:\/\/[^/]/, 'must be smtp://[user:pass@]host[:port] or smtps://...').optional(),
  SMTP_FROM: z.string().default('Integrations <no-reply@localhost>'),
  /** Bounds connecting, the greeting and each SMTP command; a send that runs over counts as failed. */
  SMTP_TIMEOUT: duration.prefault('30s'),
  DEV_MAIL_SINK: bool.optional(),
  DEV_MAIL_SINK_PORT: port.default(1025),

  // Sessions (SSO).
  ACCESS_TOKEN_TTL: duration.prefault('1h'),
  /**
   * Requests per client address (IPv6: per /64) to the public auth endpoints, as "<max>/<window>" ("off"
   * disables): starting a sign-in (POST /sso) and POST /token (code exchange, refresh).
   */
  AUTH_RATE_LIMIT_SSO: rateLimit.prefault('30/5m'),
  AUTH_RATE_LIMIT_TOKEN: rateLimit.prefault('150/5m'),
  /** Requests per client address to the SSO setup-link API (/v1/sso-setup/...), the setup page's calls. */
  SSO_SETUP_RATE_LIMIT: rateLimit.prefault('120/5m'),
  REFRESH_TOKEN_TTL: duration.prefault('30d'),
  SSO_FLOW_TTL: duration.prefault('10m'),
  AUTH_CODE_TTL: duration.prefault('5m'),
  SAML_CLOCK_SKEW: duration.prefault('120s'),
  /** Accept http:// OIDC issuers (local IdPs); unset means yes except when APP_ENV=production. */
  OIDC_ALLOW_HTTP_ISSUER: bool.optional(),
  /** Timeout of each request to an OIDC provider (discovery, token, userinfo, JWKS). */
  OIDC_HTTP_TIMEOUT: duration.prefault('10s'),
  /** Accept http:// SAML metadata URLs (local IdPs); unset means yes except when APP_ENV=production. */
  SAML_ALLOW_HTTP_METADATA: bool.optional(),
  /** Timeout of downloading a SAML provider's metadata (on save, refresh_metadata and test). */
  SAML_METADATA_TIMEOUT: duration.prefault('10s'),

  /** Creates a development project on first start with an empty control database. */
  DEV_BOOTSTRAP: bool.optional(),
  /** The development project's ref (its database is proj_<ref> on the stack's cluster). */
  DEV_PROJECT_REF: z.string().regex(PROJECT_REF, '3-40 characters: lowercase letters, digits and hyphens, starting with a letter').default('dev'),
});

type Raw = z.infer<typeof schema>;

export interface Config extends Omit<Raw, 'MASTER_KEY' | 'MASTER_KEY_PREVIOUS' | 'OUTBOUND_ALLOW_CIDRS' | 'DEV_MAIL_SINK' | 'DEV_BOOTSTRAP'> {
  masterKey: Buffer;
  previousMasterKeys: Buffer[];
  publicUrl: string;
  external: boolean;
  OUTBOUND_ALLOW_CIDRS: string[];
  DEV_MAIL_SINK: boolean;
  DEV_BOOTSTRAP: boolean;
  retryDelaysMs: number[];
}

export class ConfigError extends Error {}

const SECRET_KEYS = new Set(['MASTER_KEY', 'MASTER_KEY_PREVIOUS', 'DATABASE_URL', 'SMTP_URL', 'masterKey', 'previousMasterKeys']);

function loadPreviousKeys(raw: string | undefined, current: Buffer): Buffer[] {
  if (!raw) return [];
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s, i) => {
      const key = Buffer.from(s, 'base64');
      if (key.length !== 32) throw new ConfigError(`MASTER_KEY_PREVIOUS: key ${i + 1} must be 32 bytes encoded as base64`);
      return key;
    })
    .filter((k) => !k.equals(current));
}

function loadMasterKey(raw: string | undefined, env: Raw['APP_ENV'], stackDir: string): Buffer {
  if (raw) {
    const key = Buffer.from(raw, 'base64');
    if (key.length !== 32) throw new ConfigError('MASTER_KEY must be 32 bytes encoded as base64 (openssl rand -base64 32)');
    return key;
  }
  if (env === 'production') throw new ConfigError('MASTER_KEY is required when APP_ENV=production');
  // Development and tests: a key generated once into the state folder, so restarts can still decrypt.
  const file = path.join(stackDir, 'master.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  mkdirSync(stackDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600 });
  return key;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const present = Object.fromEntries(Object.entries(env).filter(([k, v]) => k in schema.shape && v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const raw = parsed.data;
  const externalKeys = [raw.DATABASE_URL, raw.KAFKA_BROKERS, raw.KAFKA_CONNECT_URL];
  const external = externalKeys.every(Boolean);
  if (!external && externalKeys.some(Boolean) && raw.APP_ENV !== 'test') {
    throw new ConfigError('set all of DATABASE_URL, KAFKA_BROKERS and KAFKA_CONNECT_URL for an external stack, or none for the local one');
  }
  let retryDelaysMs: number[];
  try {
    retryDelaysMs = raw.RETRY_DELAYS.split(',').map((s) => parseDuration(s));
  } catch (e) {
    throw new ConfigError(`RETRY_DELAYS: ${(e as Error).message}`);
  }
  if (retryDelaysMs.some((d) => d <= 0 || d > 6 * 3_600_000)) throw new ConfigError('RETRY_DELAYS: each delay must be > 0 and at most 6h');
  if (retryDelaysMs.length < raw.MAX_ATTEMPTS - 1) {
    throw new ConfigError(`RETRY_DELAYS: ${raw.MAX_ATTEMPTS} attempts need ${raw.MAX_ATTEMPTS - 1} delays`);
  }
  if (raw.LEDGER_RETENTION < 8 * 86_400_000) {
    throw new ConfigError('LEDGER_RETENTION: at least 8d (the outbox and retry topics keep records 7 days, and a record read again must find its ledger row)');
  }
  const dev = raw.APP_ENV !== 'production';
  const { MASTER_KEY, MASTER_KEY_PREVIOUS, ...rest } = raw;
  const masterKey = loadMasterKey(MASTER_KEY, raw.APP_ENV, raw.STACK_DIR);
  const cfg: Config = {
    ...rest,
    masterKey,
    previousMasterKeys: loadPreviousKeys(MASTER_KEY_PREVIOUS, masterKey),
    publicUrl: (raw.PUBLIC_URL ?? `http://${raw.HOST.includes(':') ? `[${raw.HOST}]` : raw.HOST}:${raw.PORT}`).replace(/\/$/, ''),
    external,
    OUTBOUND_ALLOW_CIDRS: raw.OUTBOUND_ALLOW_CIDRS ?? (dev && raw.APP_ENV === 'development' ? ['127.0.0.0/8', '::1/128'] : []),
    DEV_MAIL_SINK: raw.DEV_MAIL_SINK ?? (raw.APP_ENV === 'development' && !raw.SMTP_URL),
    DEV_BOOTSTRAP: raw.DEV_BOOTSTRAP ?? raw.APP_ENV === 'development',
    retryDelaysMs,
  };
  return Object.freeze(cfg);
}

/** The configuration as it may be printed or logged: secret-bearing keys redacted. */
export function redactedConfig(cfg: Config): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(cfg).map(([k, v]) => [k, SECRET_KEYS.has(k) && v ? '[redacted]' : v]),
  );
}
