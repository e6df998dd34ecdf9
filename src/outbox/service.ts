// The hook point "enable the outbox for this project": called when the first webhook is created,
// when SMTP is configured, or on demand. Idempotent and safe to call concurrently.
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { enableOutbox as enable, disableOutbox as disable, refreshOutbox, SlotWaitError, type OutboxEnv, type RefreshResult } from './enable.js';
import { idleCaptureHazard, POSTGRES_CONNECTOR_CLASS } from './debezium-version.js';

export function outboxEnv(ctx: Pick<AppContext, 'connect' | 'cfg' | 'topics'>): OutboxEnv {
  return {
    connect: ctx.connect,
    topicPrefix: ctx.cfg.TOPIC_PREFIX,
    outboxTopic: ctx.topics.outbox,
    debeziumDbHost: ctx.cfg.DEBEZIUM_DATABASE_HOST,
    debeziumDbPort: ctx.cfg.DEBEZIUM_DATABASE_PORT,
    slowPollMs: ctx.cfg.CAPTURE_SLOW_POLL,
    slotWaitMs: ctx.cfg.OUTBOX_SLOT_WAIT,
  };
}

const inFlight = new Map<string, Promise<void>>();

/**
 * slotWaitMs: how long the slot's creation may wait for open transactions (OUTBOX_SLOT_WAIT unless
 * said; 0 = no limit, for an operator's recapture, which has already dropped the old slot).
 */
export async function ensureOutboxEnabled(ctx: Pick<AppContext, 'db' | 'connect' | 'cfg' | 'topics' | 'projectDbs' | 'log'>, ref: string, opts: { slotWaitMs?: number } = {}): Promise<void> {
  const enabledAt = async () => {
    const r = await ctx.db.query('select outbox_enabled_at from projects where ref = $1', [ref]);
    if (r.rowCount === 0) throw new ApiError('project_not_found');
    return r.rows[0].outbox_enabled_at as Date | null;
  };
  if (await enabledAt()) return;
  let p = inFlight.get(ref);
  if (!p) {
    p = (async () => {
      try {
        // Under the project's outbox lock, so that two processes never enable it side by side: while
        // one waits for its slot, the slot is already listed, and the other would go on past it and
        // answer 'enabled' before the slot captures anything (an advisory lock takes no xid, so it
        // does not hold the slot's creation up).
        await withOutboxLock(ctx, ref, true, async () => {
          if (await enabledAt()) return;
          const env = { ...outboxEnv(ctx), slotWaitMs: opts.slotWaitMs ?? ctx.cfg.OUTBOX_SLOT_WAIT };
          const name = await enable(env, ref, await ctx.projectDbs.url(ref));
          await ctx.db.query('update projects set outbox_enabled_at = now(), connector_name = $2 where ref = $1', [ref, name]);
          ctx.log.info({ project: ref, connector: name }, 'outbox enabled');
        });
      } catch (err) {
        if (err instanceof ApiError) throw err;
        if (err instanceof SlotWaitError) {
          // the operator's log names the sessions; the owner's answer does not (they may be other tenants')
          ctx.log.warn(
            { project: ref, waited_ms: err.waitedMs, open_transactions: err.blockers },
            'enabling the outbox: its replication slot waits for transactions open in the database cluster (OUTBOX_SLOT_WAIT); end them or try again',
          );
          throw new ApiError(
            'outbox_unavailable',
            'The outbox could not be enabled yet: PostgreSQL creates its replication slot only after the transactions now open in the database cluster have ended. Try again once they have.',
          );
        }
        ctx.log.error({ err, project: ref }, 'enabling the outbox failed');
        throw new ApiError('outbox_unavailable');
      } finally {
        inFlight.delete(ref);
      }
    })();
    inFlight.set(ref, p);
  }
  await p;
}

/**
 * A session advisory lock per project in the control DB, held while its outbox is enabled, disabled
 * or refreshed: a service starting during a disable must not see the connector gone and the slot still
 * there, and register the connector again just before the slot is dropped.
 */
async function withOutboxLock<T>(ctx: Pick<AppContext, 'db'>, ref: string, wait: boolean, fn: () => Promise<T>): Promise<T | 'busy'> {
  const client = await ctx.db.connect();
  try {
    const key = `outbox:${ref}`;
    if (wait) await client.query('select pg_advisory_lock(hashtext($1))', [key]);
    else if (!(await client.query('select pg_try_advisory_lock(hashtext($1)) as ok', [key])).rows[0].ok) return 'busy';
    try {
      return await fn();
    } finally {
      await client.query('select pg_advisory_unlock(hashtext($1))', [key]);
    }
  } finally {
    client.release();
  }
}

export async function disableProjectOutbox(ctx: Pick<AppContext, 'db' | 'connect' | 'cfg' | 'topics' | 'projectDbs'>, ref: string): Promise<void> {
  await withOutboxLock(ctx, ref, true, async () => {
    await disable(outboxEnv(ctx), ref, await ctx.projectDbs.url(ref));
    await ctx.db.query('update projects set outbox_enabled_at = null, connector_name = null where ref = $1', [ref]);
  });
}

/** Connectors of every enabled project, for /health. */
export async function enabledConnectors(ctx: Pick<AppContext, 'db'>): Promise<{ ref: string; connector: string }[]> {
  const r = await ctx.db.query('select ref, connector_name from projects where outbox_enabled_at is not null and connector_name is not null');
  return r.rows.map((x) => ({ ref: x.ref, connector: x.connector_name }));
}

/**
 * One enabled project's refresh (see refreshEnabledOutboxes), under its outbox lock; 'busy' when a
 * disable or another refresh holds it, null when the project is no longer enabled.
 */
export async function refreshProjectOutbox(ctx: Pick<AppContext, 'db' | 'connect' | 'cfg' | 'topics' | 'projectDbs'>, ref: string): Promise<RefreshResult | 'busy' | null> {
  return withOutboxLock(ctx, ref, false, async () => {
    // still enabled now that we hold the lock (a disable may have finished meanwhile)
    const still = await ctx.db.query('select 1 from projects where ref = $1 and outbox_enabled_at is not null', [ref]);
    return still.rowCount ? refreshOutbox(outboxEnv(ctx), ref, await ctx.projectDbs.url(ref)) : null;
  });
}

type VersionCtx = Pick<AppContext, 'connect' | 'cfg' | 'log'>;
export interface DebeziumFound {
  /** as Connect's /connector-plugins gives it (e.g. "3.1.2.Final"); null: no PostgreSQL connector */
  version: string | null;
  /** why this version fails idle projects' connectors (debezium-version.ts), or null */
  hazard: string | null;
}

/** Which Debezium Kafka Connect runs, or null when Connect does not answer. Never throws, logs nothing. */
async function readDebeziumVersion(ctx: VersionCtx): Promise<DebeziumFound | null> {
  const version = await ctx.connect.pluginVersion(POSTGRES_CONNECTOR_CLASS).catch(() => undefined);
  if (version === undefined) return null;
  return { version, hazard: version !== null && ctx.cfg.CAPTURE_IDLE_AFTER > 0 ? idleCaptureHazard(version) : null };
}

/** An error when Connect has no PostgreSQL connector, a warning with what to do for a hazardous version, else info. */
function reportDebeziumVersion(ctx: VersionCtx, found: DebeziumFound, was?: string | null): void {
  const fields = was === undefined ? {} : { was };
  if (found.version === null) {
    ctx.log.error(fields, `Kafka Connect has no ${POSTGRES_CONNECTOR_CLASS} plugin: no outbox can be captured (install Debezium's PostgreSQL connector 3.1.x in its plugin.path)`);
  } else if (found.hazard) ctx.log.warn({ debezium: found.version, ...fields }, found.hazard);
  else ctx.log.info({ debezium: found.version, ...fields }, 'Kafka Connect runs Debezium');
}

/** How often the running service reads the version again (a Connect restarted with another Debezium). */
export const DEBEZIUM_VERSION_EVERY_MS = 60_000;
/** How often it tries while Connect does not answer. */
export const DEBEZIUM_VERSION_RETRY_MS = 10_000;

/**
 * Which Debezium Kafka Connect runs, read at start, then again every `everyMs`, or every `retryMs`
 * while Connect does not answer: a Connect that is away when the service starts is checked once it
 * answers, and one restarted with another Debezium (an upgrade) is checked again. Logs only what is
 * new (reportDebeziumVersion): the first answer and a changed version (with `was`). `first`: the
 * first read's result, null when Connect did not answer (nothing is claimed then). Never rejects.
 */
export function watchDebeziumVersion(
  ctx: VersionCtx,
  { everyMs = DEBEZIUM_VERSION_EVERY_MS, retryMs = DEBEZIUM_VERSION_RETRY_MS } = {},
): { first: Promise<DebeziumFound | null>; stop(): void } {
  let seen: string | null | undefined; // undefined: no answer yet
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const read = async (): Promise<DebeziumFound | null> => {
    const found = await readDebeziumVersion(ctx);
    if (found && found.version !== seen) {
      reportDebeziumVersion(ctx, found, seen);
      seen = found.version;
    }
    if (!stopped) {
      timer = setTimeout(() => void read(), found ? everyMs : retryMs);
      timer.unref();
    }
    return found;
  };
  return {
    first: read(),
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * At start: applies this build's connector template and base schema to every enabled project
 * (refreshOutbox compares first, so an unchanged project is not touched). One project at a time;
 * a failure is logged and the next start tries again.
 */
export async function refreshEnabledOutboxes(
  ctx: Pick<AppContext, 'db' | 'connect' | 'cfg' | 'topics' | 'projectDbs' | 'log'>,
): Promise<Map<string, RefreshResult | 'failed'>> {
  const out = new Map<string, RefreshResult | 'failed'>();
  for (const { ref } of await enabledConnectors(ctx)) {
    try {
      const r = await refreshProjectOutbox(ctx, ref);
      if (r === 'busy' || r === null) continue; // being disabled by another process, or already disabled
      out.set(ref, r);
      if (r.schema !== 'current' || r.connector === 'updated' || r.messages === 'armed') ctx.log.info({ project: ref, ...r }, 'outbox brought up to this version');
      if (r.messages === 'rows' && r.connector !== 'missing') ctx.log.warn({ project: ref }, 'no task of the outbox connector could be seen reading logical decoding messages within 30s: its webhook triggers go on writing rows of base.outbox (slower, nothing lost); the next start tries again');
      if (r.connector === 'recreated') ctx.log.warn({ project: ref }, 'the outbox connector was missing; registered it again from its replication slot (nothing committed is lost)');
      if (r.publication === 'restored') ctx.log.warn({ project: ref }, 'base.outbox had been taken out of the outbox publication; put it back (messages enqueued while it was out were not captured)');
      // (with the connector and slot gone too, the line below says what to do)
      if (r.publication === 'missing' && r.connector !== 'missing') ctx.log.error({ project: ref }, `the outbox publication is gone: the connector cannot capture anything; run npm run admin -- recapture --ref ${ref}`);
      if (r.connector === 'missing') ctx.log.error({ project: ref }, 'the outbox is enabled but its connector and replication slot are gone: messages committed since then cannot be captured; disable and enable the outbox to start again');
    } catch (err) {
      out.set(ref, 'failed');
      ctx.log.error({ err, project: ref }, 'refreshing the outbox failed; the next start tries again');
    }
  }
  return out;
}
