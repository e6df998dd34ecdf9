// Which SMTP server a project's mail goes through, and a pooled nodemailer transport per server.
//
// Resolution, in order: the project's own smtp_settings when its plan has custom_smtp; else the
// platform default (SMTP_URL); else the development mail sink when it is enabled; else nothing.
// A transport is keyed by a SHA-256 of its configuration (for a project: the settings row including
// updated_at and a digest of the sealed password), so changed settings get a new pool and the old one
// is closed when idle; no map key or log line carries a password. The project password is decrypted
// only when a pool is built, kept only inside that pool, and dropped with it after IDLE_MS unused.
import { createHash } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import { makeAllowList } from '../outbound/index.js';
import { aad } from '../lib/secret-box.js';
import { devMailSinkEnabled } from './dev-sink.js';
import { guardedSocket } from './guarded-socket.js';

export type SmtpSource = 'project' | 'platform' | 'dev-sink';
type SmtpOptions = Omit<SMTPPool.Options, 'pool'>;
export type Sender = string | { name: string; address: string };

export interface SmtpRoute {
  source: SmtpSource;
  /** hash of the configuration: identifies the pool, safe to log */
  key: string;
  from: Sender;
  /** builds the nodemailer options; the only place a project password is decrypted */
  options(): SmtpOptions;
}

type Ctx = Pick<AppContext, 'cfg' | 'db' | 'box' | 'log'>;

interface SettingsRow {
  features: string[];
  host: string | null;
  port: number;
  username: string | null;
  password_enc: Buffer | null;
  sender_email: string;
  sender_name: string | null;
  tls_mode: 'starttls' | 'implicit' | 'none';
  updated_at: Date;
}

export class UnknownProjectError extends Error {
  constructor(ref: string) {
    super(`project ${ref} does not exist`);
  }
}

/** The SMTP route for a project's mail, or null when no SMTP is configured at all. */
export async function resolveSmtp(ctx: Ctx, ref: string): Promise<SmtpRoute | null> {
  const { rows } = await ctx.db.query<SettingsRow>(
    `select p.features, s.host, s.port, s.username, s.password_enc, s.sender_email, s.sender_name, s.tls_mode, s.updated_at
       from projects j join plans p on p.name = j.plan
       left join smtp_settings s on s.project_ref = j.ref
      where j.ref = $1`,
    [ref],
  );
  const row = rows[0];
  if (!row) throw new UnknownProjectError(ref);
  if (row.host && row.features.includes('custom_smtp')) return projectRoute(ctx, ref, row);
  return platformRoute(ctx.cfg);
}

/** The platform route (default SMTP, else the dev sink), for mail not tied to a project's settings. */
export function platformRoute(cfg: Readonly<Config>): SmtpRoute | null {
  const base = { connectionTimeout: cfg.SMTP_TIMEOUT, greetingTimeout: cfg.SMTP_TIMEOUT, socketTimeout: cfg.SMTP_TIMEOUT };
  if (cfg.SMTP_URL) {
    const url = cfg.SMTP_URL;
    return {
      source: 'platform',
      key: digest('platform', url),
      from: cfg.SMTP_FROM,
      options: () => ({ ...base, ...parseSmtpUrl(url) }),
    };
  }
  if (devMailSinkEnabled(cfg)) {
    const port = cfg.DEV_MAIL_SINK_PORT;
    return {
      source: 'dev-sink',
      key: digest('dev-sink', String(port)),
      from: cfg.SMTP_FROM,
      options: () => ({ ...base, host: '127.0.0.1', port, secure: false, ignoreTLS: true }),
    };
  }
  return null;
}

function projectRoute(ctx: Ctx, ref: string, s: SettingsRow): SmtpRoute {
  const sealedDigest = s.password_enc ? createHash('sha256').update(s.password_enc).digest('hex') : '';
  const timeout = ctx.cfg.SMTP_TIMEOUT;
  return {
    source: 'project',
    key: digest('project', ref, s.host!, String(s.port), s.username ?? '', sealedDigest, s.tls_mode, s.updated_at.toISOString()),
    from: s.sender_name ? { name: s.sender_name, address: s.sender_email } : s.sender_email,
    options: () => ({
      host: s.host!,
      port: s.port,
      secure: s.tls_mode === 'implicit',
      // starttls is required, not opportunistic: a downgraded session would send the password in clear
      requireTLS: s.tls_mode === 'starttls',
      ignoreTLS: s.tls_mode === 'none',
      auth: s.username ? { user: s.username, pass: s.password_enc ? ctx.box.open(s.password_enc, aad.smtpPassword(ref)) : '' } : undefined,
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout,
      getSocket: guardedSocket(allowListFor(ctx.cfg), timeout),
    }),
  };
}

/** smtp://user:pass@host:port (STARTTLS when offered) or smtps://... (implicit TLS). */
export function parseSmtpUrl(raw: string): SmtpOptions {
  const u = new URL(raw);
  const secure = u.protocol === 'smtps:';
  const user = decodeURIComponent(u.username);
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: u.port ? Number(u.port) : secure ? 465 : 587,
    secure,
    auth: user ? { user, pass: decodeURIComponent(u.password) } : undefined,
  };
}

function digest(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 32);
}

const allowLists = new WeakMap<object, ReturnType<typeof makeAllowList>>();
function allowListFor(cfg: Readonly<Config>) {
  let allow = allowLists.get(cfg);
  if (!allow) allowLists.set(cfg, (allow = makeAllowList(cfg.OUTBOUND_ALLOW_CIDRS)));
  return allow;
}

// ---------------------------------------------------------------------------------------------
// Pools

// Idle pools are closed: sockets are not held open to servers nobody mails, and a decrypted password
// does not outlive its use by more than this.
const IDLE_MS = 60_000;
const MAX_CONNECTIONS = 5;

interface Pooled {
  transport: Transporter<SMTPPool.SentMessageInfo>;
  lastUsed: number;
  /** secrets this pool knows, to scrub them from any server reply or error text */
  secrets: string[];
  /** sends under way: a pool is never closed for idleness in the middle of one */
  inflight: number;
  /** closes the pool and forgets it (a send past its deadline): the next send builds a new one */
  discard(): void;
}

class TransportPool {
  readonly #pools = new Map<string, Pooled>();
  readonly #sweep: NodeJS.Timeout;

  constructor(private readonly log: AppContext['log']) {
    this.#sweep = setInterval(() => this.#closeIdle(), IDLE_MS / 2);
    this.#sweep.unref();
  }

  get(route: SmtpRoute): Pooled {
    let p = this.#pools.get(route.key);
    if (!p) {
      const options = route.options();
      const secrets = options.auth && 'pass' in options.auth && options.auth.pass ? [options.auth.pass] : [];
      // logger: false keeps nodemailer from ever printing the AUTH exchange
      const transport = nodemailer.createTransport({ ...options, pool: true, maxConnections: MAX_CONNECTIONS, logger: false, debug: false });
      // a pooled connection failing between sends must not become an unhandled 'error' event
      transport.on('error', (err: Error & { code?: string }) => this.log.warn({ smtp: route.key, code: err.code }, 'pooled SMTP connection failed'));
      const pooled: Pooled = {
        transport,
        lastUsed: Date.now(),
        secrets,
        inflight: 0,
        discard: () => {
          if (this.#pools.get(route.key) === pooled) this.#pools.delete(route.key);
          transport.close();
        },
      };
      p = pooled;
      this.#pools.set(route.key, p);
    }
    p.lastUsed = Date.now();
    return p;
  }

  #closeIdle(): void {
    const cutoff = Date.now() - IDLE_MS;
    for (const [key, p] of this.#pools) {
      if (p.inflight === 0 && p.lastUsed < cutoff) {
        this.#pools.delete(key);
        p.transport.close();
      }
    }
  }

  close(): void {
    clearInterval(this.#sweep);
    for (const p of this.#pools.values()) p.transport.close();
    this.#pools.clear();
  }
}

// One pool set per application context: no process-wide state, and a test's context has its own.
const pools = new WeakMap<object, TransportPool>();

/** Runs one send on the route's pooled transport (built on first use: that is when a password is decrypted). */
export async function withTransport<T>(ctx: Pick<AppContext, 'cfg' | 'log'>, route: SmtpRoute, send: (p: Pooled) => Promise<T>): Promise<T> {
  let pool = pools.get(ctx.cfg);
  if (!pool) pools.set(ctx.cfg, (pool = new TransportPool(ctx.log)));
  const p = pool.get(route);
  p.inflight++;
  try {
    return await send(p);
  } finally {
    p.inflight--;
    p.lastUsed = Date.now();
  }
}

/** Closes every pooled SMTP connection of this context (on shutdown). */
export function closeEmailTransports(ctx: Pick<AppContext, 'cfg'>): void {
  pools.get(ctx.cfg)?.close();
  pools.delete(ctx.cfg);
}
