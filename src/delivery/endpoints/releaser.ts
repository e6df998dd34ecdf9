// The releaser: puts held messages back on the outbox topic when their endpoint may be tried again,
// and gives up on endpoints that have failed for ENDPOINT_DISABLE_AFTER. One dispatcher process at
// a time does it (an advisory lock held for the tick); it runs every TICK_MS while any
// message is held or any circuit is not closed, and does nothing otherwise.
//
// Per tick, each step in a transaction of its own:
//   1. give up: a circuit open since ENDPOINT_DISABLE_AFTER whose latest probe failed. A webhook
//      is disabled (enabled = false, disabled_reason 'failing'; its trigger stays, so changes keep
//      arriving and end dead 'webhook disabled', ready to be replayed when it is enabled again) and
//      its owner is emailed; a host's held messages are released as 'expire' (dead, no request).
//      The circuit's row is removed: a fresh start when the endpoint is used again.
//   2. probe: an open circuit whose probe_at has passed, with messages held, turns half-open and
//      its oldest held message goes back as the probe. A probe that never reports (its dispatcher
//      died) is sent again after PROBE_TIMEOUT_MS.
//   3. release: endpoints whose circuit is closed get their held messages back in order, at
//      CIRCUIT_RELEASE_RATE per second, or at the webhook's rate_limit when it is lower.
// A message goes back with released = probe | paced | expire, due now, and held-ms increased by
// the time it was held. The rows are deleted in the same transaction after the produce is
// acknowledged: a crash in between puts a message back twice (at least once), never loses one.
import type pg from 'pg';
import type { AppContext } from '../../context.js';
import { notifyOwner } from '../../email/index.js';
import { endpointCircuitTransitions, endpointReleases } from '../../lib/metrics.js';
import type { Released } from '../message.js';
import type { Worker } from '../worker.js';
import { announce, SERVICE_ACTOR, type EndpointHealth } from './health.js';
import { recordOperatorAudit } from '../../projects/index.js';

const TICK_MS = 250;
const LOCK_KEY = 0x686f6c64; // "hold"
const PROBE_TIMEOUT_MS = 120_000;
const BATCH = 500;

interface HeldRow {
  id: string;
  project_ref: string;
  endpoint: string;
  message_id: string;
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

export function startReleaser(ctx: AppContext, health: EndpointHealth): Worker {
  const log = ctx.log.child({ component: 'releaser' });
  // fractional release budget per endpoint, so 5/s over 250 ms ticks is 5/s and not 4 or 8
  const budget = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let last = Date.now();

  async function tick(): Promise<void> {
    const now = Date.now();
    const dt = Math.min(1000, now - last) / 1000;
    last = now;
    if (!health.views().some((v) => v.held > 0 || v.state !== 'closed')) return;
    const disabled: Disabled[] = [];
    const client = await ctx.db.connect();
    try {
      if (!(await client.query('select pg_try_advisory_lock($1) as ok', [LOCK_KEY])).rows[0].ok) return;
      try {
        // one transaction per step: a probe's claim must be committed before the probe is on the
        // topic, or its outcome (milliseconds later) could not see the half-open state it ends
        disabled.push(...(await inTransaction(client, () => giveUp(client))));
        const claimed = await inTransaction(client, () => claimProbes(client));
        for (const e of claimed) await inTransaction(client, () => sendProbe(client, e));
        await inTransaction(client, () => release(client, dt));
      } finally {
        await client.query('select pg_advisory_unlock($1)', [LOCK_KEY]);
      }
    } finally {
      client.release();
    }
    for (const d of disabled) await notice(d);
    if (disabled.length > 0) await health.refresh().catch(() => {});
  }

  async function giveUp(c: pg.PoolClient): Promise<Disabled[]> {
    if (ctx.cfg.ENDPOINT_DISABLE_AFTER <= 0) return [];
    const r = await c.query(
      `delete from endpoint_health
        where state <> 'closed' and failing_since <= now() - $1 * interval '1 millisecond'
          and failed_probes > 0 and probe_claimed_at is null
       returning project_ref, endpoint, webhook_id, failing_since, last_error`,
      [ctx.cfg.ENDPOINT_DISABLE_AFTER],
    );
    const out: Disabled[] = [];
    for (const row of r.rows) {
      const e = { project: row.project_ref, key: row.endpoint };
      await announce(c, e, 'gone');
      await c.query('delete from endpoint_rate where project_ref = $1 and endpoint = $2', [e.project, e.key]);
      if (row.webhook_id) {
        const w = await c.query(
          `update webhooks set enabled = false, disabled_reason = 'failing', disabled_at = now(), disabled_failing_since = $2, updated_at = now()
            where id = $1 and enabled returning name, url`,
          [row.webhook_id, row.failing_since],
        );
        // its held messages go back as usual and end dead 'webhook disabled' in the channel
        await putBack(c, e.project, e.key, 'paced', Infinity);
        if (w.rowCount) {
          out.push({ project: e.project, webhookId: row.webhook_id, name: w.rows[0].name, url: w.rows[0].url, failingSince: row.failing_since, lastError: row.last_error });
          await recordOperatorAudit(c, SERVICE_ACTOR, e.project, {
            action: 'webhook.auto_disable',
            resourceType: 'webhook',
            resourceId: row.webhook_id,
            details: { reason: 'failing', failing_since: row.failing_since, last_error: row.last_error, disable_after_ms: ctx.cfg.ENDPOINT_DISABLE_AFTER },
          });
          log.warn({ project: e.project, webhook: row.webhook_id, failingSince: row.failing_since }, 'webhook disabled: it has failed every probe for ENDPOINT_DISABLE_AFTER');
        }
      } else {
        const n = await putBack(c, e.project, e.key, 'expire', Infinity);
        await recordOperatorAudit(c, SERVICE_ACTOR, e.project, {
          action: 'endpoint.give_up',
          resourceType: 'endpoint',
          resourceId: e.key,
          details: { endpoint: e.key, failing_since: row.failing_since, last_error: row.last_error, held_messages_ended: n },
        });
        log.warn({ project: e.project, endpoint: e.key, ended: n }, 'endpoint given up on: its held messages end dead');
      }
    }
    return out;
  }

  /** Open circuits whose probe is due and that have a message to probe with turn half-open. */
  async function claimProbes(c: pg.PoolClient): Promise<{ project: string; key: string; probes: number }[]> {
    // a probe whose outcome never came (its dispatcher died) is allowed again
    await c.query(`update endpoint_health set state = 'open', probe_at = now() where state = 'half_open' and probe_claimed_at < now() - $1 * interval '1 millisecond'`, [PROBE_TIMEOUT_MS]);
    const r = await c.query(
      `update endpoint_health h set state = 'half_open', probe_claimed_at = now(), probes = probes + 1, updated_at = now()
        where state = 'open' and probe_at <= now()
          and exists (select 1 from held_messages m where m.project_ref = h.project_ref and m.endpoint = h.endpoint)
       returning project_ref, endpoint, probes`,
    );
    for (const row of r.rows) await announce(c, { project: row.project_ref, key: row.endpoint }, 'half_open');
    return r.rows.map((row) => ({ project: row.project_ref, key: row.endpoint, probes: row.probes }));
  }

  /** The oldest held message of a half-open endpoint goes back as its probe. */
  async function sendProbe(c: pg.PoolClient, e: { project: string; key: string; probes: number }): Promise<void> {
    const n = await putBack(c, e.project, e.key, 'probe', 1);
    if (n === 0) {
      // released meanwhile (the webhook changed): wait for the next held message
      await c.query(`update endpoint_health set state = 'open', probe_claimed_at = null where project_ref = $1 and endpoint = $2 and state = 'half_open'`, [e.project, e.key]);
      return;
    }
    endpointCircuitTransitions.inc({ to: 'half_open' });
    log.info({ project: e.project, endpoint: e.key }, 'circuit half-open: one held message goes as a probe');
    await recordOperatorAudit(c, SERVICE_ACTOR, e.project, {
      action: 'endpoint.circuit_probe',
      resourceType: e.key.startsWith('webhook:') ? 'webhook' : 'endpoint',
      resourceId: e.key.startsWith('webhook:') ? e.key.slice('webhook:'.length) : e.key,
      details: { endpoint: e.key, probe: e.probes },
    });
  }

  async function release(c: pg.PoolClient, dt: number): Promise<void> {
    const r = await c.query(
      `select m.project_ref, m.endpoint, min(w.rate_limit) as rate_limit
         from held_messages m
         left join endpoint_health h using (project_ref, endpoint)
         left join webhooks w on m.endpoint = 'webhook:' || w.id::text
        where coalesce(h.state, 'closed') = 'closed'
        group by 1, 2`,
    );
    const seen = new Set<string>();
    for (const row of r.rows) {
      const id = `${row.project_ref}\u0000${row.endpoint}`;
      seen.add(id);
      const rate = Math.min(ctx.cfg.CIRCUIT_RELEASE_RATE, row.rate_limit ?? Infinity);
      const have = Math.min(rate, (budget.get(id) ?? 0) + rate * dt);
      const n = Math.floor(have);
      budget.set(id, have - n);
      if (n > 0) await putBack(c, row.project_ref, row.endpoint, 'paced', n);
    }
    for (const id of budget.keys()) if (!seen.has(id)) budget.delete(id);
  }

  /** Produces up to `limit` oldest held messages of an endpoint to the outbox topic and deletes them. */
  async function putBack(c: pg.PoolClient, project: string, endpoint: string, mode: Released, limit: number): Promise<number> {
    let total = 0;
    while (total < limit) {
      const rows: HeldRow[] = (
        await c.query(
          `select id, project_ref, endpoint, message_id, headers, value, (extract(epoch from clock_timestamp() - held_at) * 1000)::bigint as held_ms
             from held_messages where project_ref = $1 and endpoint = $2 order by id limit $3 for update skip locked`,
          [project, endpoint, Math.min(BATCH, limit - total)],
        )
      ).rows;
      if (rows.length === 0) break;
      await ctx.producer.send({
        topic: ctx.topics.outbox,
        acks: -1,
        messages: rows.map((m) => ({
          key: m.message_id,
          value: m.value,
          headers: { ...m.headers, 'due-at': '0', 'held-ms': String((Number(m.headers['held-ms']) || 0) + Number(m.held_ms)), released: mode },
        })),
      });
      await c.query('delete from held_messages where id = any($1::bigint[])', [rows.map((m) => m.id)]);
      endpointReleases.inc({ mode }, rows.length);
      total += rows.length;
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
    },
  };
}

async function inTransaction<T>(c: pg.PoolClient, fn: () => Promise<T>): Promise<T> {
  await c.query('begin');
  try {
    const out = await fn();
    await c.query('commit');
    return out;
  } catch (err) {
    await c.query('rollback').catch(() => {});
    throw err;
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}
