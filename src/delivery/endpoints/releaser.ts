// The releaser: puts held messages back on the outbox topic when their endpoint may be tried again,
// and gives up on endpoints that have failed for ENDPOINT_DISABLE_AFTER. One dispatcher process
// does it: the leader, which holds a session advisory lock on a connection of its own for as long
// as it lives (so the release pace is one process's, not one per process); another takes over
// when it dies. It runs every TICK_MS while any message is held or any circuit is not closed.
//
// Per tick, each endpoint on its own (an error with one is logged and does not stop the others):
//   1. give up: a circuit open since ENDPOINT_DISABLE_AFTER whose latest probe failed. A webhook
//      is disabled (enabled = false, disabled_reason 'failing'; its trigger stays, so changes keep
//      arriving and end dead 'webhook disabled', ready to be replayed when it is enabled again) and
//      its owner is emailed; a host's held messages are released as 'give_up' (dead, no request).
//      The circuit's row is removed: a fresh start when the endpoint is used again.
//   2. probe: an open circuit whose probe_at has passed, with messages held, turns half-open (that
//      is committed first, so the probe's outcome sees it) and its oldest held message goes back as
//      the probe. A probe that never reports (its dispatcher died) is sent again after PROBE_TIMEOUT_MS.
//   3. release: endpoints whose circuit is closed get their held messages back in order, at
//      CIRCUIT_RELEASE_RATE per second, or at the webhook's rate_limit when it has one.
// A message goes back with released = probe | paced | expire, due now, and (for a circuit hold)
// held-ms increased by the time it was held. Each batch is one transaction: its rows are deleted,
// then produced, then the deletion commits. A record held again while its row's deletion is
// uncommitted waits for it (the unique key), so it is never mistaken for the old row; a crash after
// the produce and before the commit puts a message back twice (at least once), never loses one.
//
// Everything here is per (project, endpoint): two projects calling the same host:port are two
// endpoints, and giving one up ends only its own held messages and disables only a webhook of its
// own project (docs/delivery.md, "One project's endpoints are its own").
import type pg from 'pg';
import type { AppContext } from '../../context.js';
import { notifyOwner } from '../../email/index.js';
import { endpointCircuitTransitions, endpointReleases } from '../../lib/metrics.js';
import type { Released } from '../message.js';
import type { Worker } from '../worker.js';
import { announce, HELD_ENDPOINTS, SERVICE_ACTOR, type EndpointHealth } from './health.js';
import { recordOperatorAudit } from '../../projects/index.js';
import { withTransaction } from '../../db/index.js';

const TICK_MS = 250;
const LOCK_KEY = 0x686f6c64; // "hold"
const PROBE_TIMEOUT_MS = 120_000;
const BATCH = 500;
/** How often the leader deletes rows of endpoints that are healthy again. */
const CLEANUP_MS = 30_000;

interface HeldRow {
  id: string;
  message_id: string;
  reason: string;
  headers: Record<string, string>;
  value: Buffer;
  held_ms: string;
}

interface Disabled {
  project: string;
  webhookId: string;
  name: string;
  url: string;
  failingSince: Date;
  lastError: string | null;
}

type Ep = { project: string; key: string };

export function startReleaser(ctx: AppContext, health: EndpointHealth): Worker {
  const log = ctx.log.child({ component: 'releaser' });
  // fractional release budget per endpoint, so 5/s over 250 ms ticks is 5/s and not 4 or 8
  const budget = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  /** owner notices being sent (never awaited by a tick; awaited at stop) */
  const notices = new Set<Promise<void>>();
  let last = Date.now();
  let lastCleanup = 0;
  let leader: pg.PoolClient | undefined;

  /** Holds (or takes) the leader lock; false when another process has it. */
  async function lead(): Promise<boolean> {
    if (leader) return true;
    const c = await ctx.db.connect();
    let ok = false;
    try {
      ok = (await c.query('select pg_try_advisory_lock($1) as ok', [LOCK_KEY])).rows[0].ok;
    } finally {
      if (!ok) c.release();
    }
    if (!ok) return false;
    const lost = () => {
      if (leader !== c) return;
      leader = undefined;
      c.release(true);
      log.info('releaser leadership lost (its connection closed); another process or the next tick takes over');
    };
    c.on('error', lost);
    c.on('end', lost);
    leader = c;
    log.info('this process releases held messages (leader)');
    return true;
  }

  /** Runs fn for each item, logging (not throwing) a failure, so one endpoint cannot stall the rest. */
  async function each<T>(items: T[], what: string, fn: (x: T) => Promise<void>): Promise<void> {
    for (const x of items) {
      await fn(x).catch((err) => log.warn({ err, item: x, step: what }, 'releaser step failed for one endpoint; trying again next tick'));
    }
  }

  async function tick(): Promise<void> {
    const now = Date.now();
    const dt = Math.min(1000, now - last) / 1000;
    last = now;
    if (!health.views().some((v) => v.held > 0 || v.state !== 'closed')) return;
    if (!(await lead())) return;
    const disabled: Disabled[] = [];
    await each(await giveUpCandidates(), 'give up', async (e) => {
      const d = await giveUp(e);
      if (d) disabled.push(d);
    });
    await each(await claimProbes(), 'probe', sendProbe);
    const ready = await releasable();
    await each(ready, 'release', (r) => release(r, dt));
    const seen = new Set(ready.map((r) => `${r.project}\u0000${r.key}`));
    for (const id of budget.keys()) if (!seen.has(id)) budget.delete(id);
    if (now - lastCleanup > CLEANUP_MS) {
      lastCleanup = now;
      await cleanup().catch((err) => log.warn({ err }, 'deleting rows of healthy endpoints failed'));
    }
    // the owner's notice goes through the project's own SMTP server, which may be slow or hostile:
    // sent beside the loop, never awaited by the tick that probes and releases every project's
    // endpoints (a notice held for 30 s held them all; found by review, 2026-11-29)
    for (const d of disabled) {
      const sent = notice(d)
        .catch((err) => log.warn({ err, project: d.project, webhook: d.webhookId }, 'sending the disable notice failed'))
        .finally(() => notices.delete(sent));
      notices.add(sent);
    }
    if (disabled.length > 0) await health.refresh().catch(() => {});
  }

  async function giveUpCandidates(): Promise<Ep[]> {
    if (ctx.cfg.ENDPOINT_DISABLE_AFTER <= 0) return [];
    const r = await ctx.db.query(
      `select project_ref, endpoint from endpoint_health
        where state = 'open' and failing_since <= now() - $1 * interval '1 millisecond' and failed_probes > 0`,
      [ctx.cfg.ENDPOINT_DISABLE_AFTER],
    );
    return r.rows.map((row) => ({ project: row.project_ref, key: row.endpoint }));
  }

  async function giveUp(e: Ep): Promise<Disabled | null> {
    let out: Disabled | null = null;
    const row = await withTransaction(ctx.db, async (c) => {
      const r = await c.query(
        `delete from endpoint_health where project_ref = $1 and endpoint = $2 and state = 'open'
         returning webhook_id, failing_since, last_error`,
        [e.project, e.key],
      );
      if (!r.rows[0]) return null;
      const h = r.rows[0];
      await announce(c, e, 'gone');
      await c.query('delete from endpoint_rate where project_ref = $1 and endpoint = $2', [e.project, e.key]);
      if (h.webhook_id) {
        // only a webhook of this circuit's project: whatever a row says, giving up on one project's
        // endpoint never disables another project's webhook (migration 102 also makes such a row
        // impossible to write)
        const w = await c.query(
          `update webhooks set enabled = false, disabled_reason = 'failing', disabled_at = now(), disabled_failing_since = $2, updated_at = now()
            where id = $1 and project_ref = $3 and enabled returning name, url`,
          [h.webhook_id, h.failing_since, e.project],
        );
        if (w.rowCount) {
          out = { project: e.project, webhookId: h.webhook_id, name: w.rows[0].name, url: w.rows[0].url, failingSince: h.failing_since, lastError: h.last_error };
          await recordOperatorAudit(c, SERVICE_ACTOR, e.project, {
            action: 'webhook.auto_disable',
            resourceType: 'webhook',
            resourceId: h.webhook_id,
            details: { reason: 'failing', failing_since: h.failing_since, last_error: h.last_error, disable_after_ms: ctx.cfg.ENDPOINT_DISABLE_AFTER },
          });
        }
      }
      return h;
    });
    if (!row) return null;
    if (row.webhook_id) {
      // its held messages (this project's only) go back and end dead 'webhook disabled' in the channel
      await putBack(e, 'paced', Infinity);
      if (out) log.warn({ project: e.project, webhook: row.webhook_id, failingSince: row.failing_since }, 'webhook disabled: it has failed every probe for ENDPOINT_DISABLE_AFTER');
      else log.warn({ project: e.project, webhook: row.webhook_id }, 'endpoint given up on: its webhook is not an enabled webhook of this project, so none was disabled; its held messages go back');
    } else {
      const n = await putBack(e, 'give_up', Infinity);
      await health.audit(e, 'endpoint.give_up', { failing_since: row.failing_since, last_error: row.last_error, held_messages_ended: n });
      log.warn({ project: e.project, endpoint: e.key, ended: n }, 'endpoint given up on: its held messages end dead');
    }
    return out;
  }

  /** Open circuits whose probe is due and that have a message to probe with turn half-open (committed). */
  async function claimProbes(): Promise<(Ep & { probes: number })[]> {
    return withTransaction(ctx.db, async (c) => {
      // a probe whose outcome never came (its dispatcher died) is allowed again
      await c.query(
        `update endpoint_health set state = 'open', probe_at = now(), probe_claimed_at = null
          where state = 'half_open' and probe_claimed_at < now() - $1 * interval '1 millisecond'`,
        [PROBE_TIMEOUT_MS],
      );
      const r = await c.query(
        `update endpoint_health h set state = 'half_open', probe_claimed_at = now(), probes = probes + 1, updated_at = now()
          where state = 'open' and probe_at <= now()
            and exists (select 1 from held_messages m where m.project_ref = h.project_ref and m.endpoint = h.endpoint)
         returning project_ref, endpoint, probes`,
      );
      for (const row of r.rows) await announce(c, { project: row.project_ref, key: row.endpoint }, 'half_open');
      return r.rows.map((row) => ({ project: row.project_ref, key: row.endpoint, probes: row.probes }));
    });
  }

  /** The oldest held message of a half-open endpoint goes back as its probe. */
  async function sendProbe(e: Ep & { probes: number }): Promise<void> {
    const n = await putBack(e, 'probe', 1).catch(async (err) => {
      await reopen(e);
      throw err;
    });
    if (n === 0) return reopen(e); // released meanwhile (the webhook changed): wait for the next one
    endpointCircuitTransitions.inc({ to: 'half_open' });
    log.info({ project: e.project, endpoint: e.key }, 'circuit half-open: one held message goes as a probe');
    await health.audit(e, 'endpoint.circuit_probe', { probe: e.probes });
  }

  async function reopen(e: Ep): Promise<void> {
    await ctx.db.query(`update endpoint_health set state = 'open', probe_claimed_at = null where project_ref = $1 and endpoint = $2 and state = 'half_open'`, [e.project, e.key]);
  }

  /**
   * Endpoints with held messages (HELD_ENDPOINTS) and a closed circuit (or none), with their rate
   * limit (of the endpoint's webhook in the same project: another project's is never applied).
   */
  async function releasable(): Promise<(Ep & { rate: number | null })[]> {
    const r = await ctx.db.query(
      `${HELD_ENDPOINTS}
       select p.project_ref, p.endpoint, w.rate_limit
         from pairs p
         left join endpoint_health h on h.project_ref = p.project_ref and h.endpoint = p.endpoint
         left join webhooks w on p.endpoint like 'webhook:%' and w.id::text = substr(p.endpoint, 9) and w.project_ref = p.project_ref
        where coalesce(h.state, 'closed') = 'closed'`,
    );
    return r.rows.map((row) => ({ project: row.project_ref, key: row.endpoint, rate: row.rate_limit }));
  }

  async function release(e: Ep & { rate: number | null }, dt: number): Promise<void> {
    const id = `${e.project}\u0000${e.key}`;
    // a rate-limited webhook's backlog goes at its own rate (its new messages queue behind it);
    // after a circuit closes, at CIRCUIT_RELEASE_RATE (new messages are sent at once meanwhile)
    const rate = e.rate ?? ctx.cfg.CIRCUIT_RELEASE_RATE;
    const have = Math.min(rate, (budget.get(id) ?? 0) + rate * dt);
    const n = Math.floor(have);
    budget.set(id, have - n);
    if (n > 0) await putBack(e, 'paced', n);
  }

  /** Closed circuits whose window ended long ago and that hold nothing: forgotten (healthy again). */
  async function cleanup(): Promise<void> {
    await ctx.db.query(
      `delete from endpoint_health h
        where state = 'closed' and window_started_at < now() - 2 * $1 * interval '1 millisecond'
          and not exists (select 1 from held_messages m where m.project_ref = h.project_ref and m.endpoint = h.endpoint)`,
      [ctx.cfg.CIRCUIT_WINDOW],
    );
  }

  /** Puts up to `limit` oldest held messages of an endpoint back on the outbox topic. */
  async function putBack(e: Ep, mode: Released, limit: number): Promise<number> {
    let total = 0;
    while (total < limit) {
      const n = await withTransaction(ctx.db, async (c) => {
        const rows: HeldRow[] = (
          await c.query(
            // the release is marked in the same transaction (held_releases, migration 112): a copy of
            // the held record read again after this commit is done with, as while the hold existed
            `with put as (
               delete from held_messages where id in (
                 select id from held_messages where project_ref = $1 and endpoint = $2 order by id limit $3 for update skip locked)
               returning id, project_ref, message_id, run, attempt, reason, headers, value, held_at
             ), marked as (
               insert into held_releases (project_ref, message_id, run, attempt)
               select distinct project_ref, message_id, run, attempt from put
               on conflict (project_ref, message_id, run, attempt) do nothing
             )
             select id, message_id, reason, headers, value, (extract(epoch from clock_timestamp() - held_at) * 1000)::bigint as held_ms from put`,
            [e.project, e.key, Math.min(BATCH, limit - total)],
          )
        ).rows;
        if (rows.length === 0) return 0;
        rows.sort((a, b) => Number(a.id) - Number(b.id));
        await ctx.producer.send({
          topic: ctx.topics.outbox,
          acks: -1,
          messages: rows.map((m) => {
            // waiting for an endpoint that is down does not spend the age budget; waiting for a
            // rate limit the owner set below their traffic does (it is bounded by MAX_MESSAGE_AGE)
            const credit = m.reason === 'circuit' ? Number(m.held_ms) : 0;
            return { key: m.message_id, value: m.value, headers: { ...m.headers, 'due-at': '0', 'held-ms': String((Number(m.headers['held-ms']) || 0) + credit), released: mode } };
          }),
        });
        endpointReleases.inc({ mode }, rows.length);
        return rows.length;
      });
      if (n === 0) break;
      total += n;
    }
    return total;
  }

  async function notice(d: Disabled): Promise<void> {
    const link = `${ctx.cfg.publicUrl}/dashboard/#/p/${d.project}/webhooks`;
    const text = [
      `The webhook "${d.name}" of project ${d.project} has been disabled.`,
      '',
      `Why: every attempt and every probe to ${originOf(d.url)} has failed since ${d.failingSince.toISOString()}` + (d.lastError ? ` (last error: ${d.lastError}).` : '.'),
      'What happens now: changes to its table are still recorded, but nothing is sent; each one ends as a dead delivery.',
      'When the endpoint works again, enable the webhook: the dashboard then offers to replay what arrived while it was disabled.',
      '',
      `Dashboard: ${link}`,
    ].join('\n');
    const result = await notifyOwner(ctx, d.project, { subject: `Webhook "${d.name}" disabled: its endpoint keeps failing`, text });
    await recordOperatorAudit(ctx.db, SERVICE_ACTOR, d.project, {
      action: 'webhook.disable_notice',
      resourceType: 'webhook',
      resourceId: d.webhookId,
      details: result.sent ? { sent: true, to: result.to } : { sent: false, to: result.to, reason: result.reason },
    }).catch((err) => log.warn({ err }, 'writing the audit entry failed'));
  }

  const loop = () => {
    if (stopped) return;
    running = tick()
      .catch((err) => log.warn({ err }, 'releasing held messages failed; trying again'))
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, TICK_MS);
      });
  };
  timer = setTimeout(loop, TICK_MS);

  return {
    name: 'releaser',
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await Promise.all(notices);
      const l = leader;
      leader = undefined;
      if (l) {
        await l.query('select pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
        l.release();
      }
    },
  };
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}
