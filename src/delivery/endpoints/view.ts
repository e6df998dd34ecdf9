// How endpoints look from the Management API and the dashboard: a webhook's circuit, and every
// endpoint of a project that is not simply healthy (GET /v1/projects/{ref}/outbox/endpoints).
import type pg from 'pg';
import { announce } from './health.js';

type Q = Pick<pg.ClientBase, 'query'>;

export interface CircuitView {
  endpoint: string;
  webhook_id: string | null;
  /** closed: sending; open: nothing is sent, messages are held; half_open: one probe is out */
  state: 'closed' | 'open' | 'half_open';
  held_messages: number;
  failures_in_window: number;
  attempts_in_window: number;
  last_error: string | null;
  last_failure_at: string | null;
  opened_at: string | null;
  next_probe_at: string | null;
  failing_since: string | null;
  probes: number;
  failed_probes: number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Endpoints of a project with a circuit row or held messages; `keys` narrows to those endpoints. */
export async function endpointViews(q: Q, ref: string, keys?: string[]): Promise<CircuitView[]> {
  const r = await q.query(
    `select project_ref, endpoint, h.webhook_id, coalesce(h.state, 'closed') as state, coalesce(m.n, 0)::int as held,
            coalesce(h.window_failures, 0) as window_failures, coalesce(h.window_attempts, 0) as window_attempts,
            h.last_error, h.last_failure_at, h.opened_at, h.probe_at, h.failing_since, coalesce(h.probes, 0) as probes,
            coalesce(h.failed_probes, 0) as failed_probes
       from (select * from endpoint_health where project_ref = $1) h
       full join (select project_ref, endpoint, count(*) as n from held_messages where project_ref = $1 group by 1, 2) m using (project_ref, endpoint)
      where $2::text[] is null or endpoint = any($2::text[])
      order by endpoint`,
    [ref, keys ?? null],
  );
  return r.rows.map((row) => ({
    endpoint: row.endpoint,
    webhook_id: row.webhook_id ?? (row.endpoint.startsWith('webhook:') ? row.endpoint.slice(8) : null),
    state: row.state,
    held_messages: row.held,
    failures_in_window: row.window_failures,
    attempts_in_window: row.window_attempts,
    last_error: row.last_error,
    last_failure_at: iso(row.last_failure_at),
    opened_at: iso(row.opened_at),
    next_probe_at: row.state === 'open' ? iso(row.probe_at) : null,
    failing_since: iso(row.failing_since),
    probes: row.probes,
    failed_probes: row.failed_probes,
  }));
}

/** The circuit of a webhook with nothing recorded: closed, nothing held. */
export const healthyCircuit = (webhookId: string): CircuitView => ({
  endpoint: `webhook:${webhookId}`,
  webhook_id: webhookId,
  state: 'closed',
  held_messages: 0,
  failures_in_window: 0,
  attempts_in_window: 0,
  last_error: null,
  last_failure_at: null,
  opened_at: null,
  next_probe_at: null,
  failing_since: null,
  probes: 0,
  failed_probes: 0,
});

/**
 * What enabling an automatically disabled webhook offers to replay: the dead deliveries of the
 * webhook from the first one that ended 'webhook disabled' since it was disabled, as the body of
 * POST /v1/projects/{ref}/outbox/replay (bulk replay) and how many deliveries it matches now.
 */
export async function replayOffer(q: Q, ref: string, webhookId: string, disabledAt: Date): Promise<{ deliveries: number; request: { status: 'dead'; webhook_id: string; since: string } } | null> {
  const r = await q.query(
    `with first as (
       select min(message_created_at) as since from deliveries
        where project_ref = $1 and webhook_id = $2 and status = 'dead' and last_error = 'webhook disabled' and updated_at >= $3)
     select first.since, (select count(*) from deliveries d where d.project_ref = $1 and d.webhook_id = $2 and d.status = 'dead' and d.message_created_at >= first.since)::int as n
       from first where first.since is not null`,
    [ref, webhookId, disabledAt],
  );
  if (!r.rows[0]) return null;
  return { deliveries: r.rows[0].n, request: { status: 'dead', webhook_id: webhookId, since: r.rows[0].since.toISOString() } };
}

/**
 * Forgets a webhook's failures (its URL changed, or its owner enabled or disabled it): the circuit
 * is closed and what is held is released at the release pace. Every dispatcher hears of it at once
 * and reads the webhook afresh instead of trusting its cached copy (gate.ts), so a replay made
 * right after enabling it is not ended as 'webhook disabled' by a copy from before.
 */
export async function resetWebhookCircuit(q: Q, ref: string, webhookId: string): Promise<void> {
  const e = { project: ref, key: `webhook:${webhookId}` };
  await q.query('delete from endpoint_health where project_ref = $1 and endpoint = $2', [e.project, e.key]);
  await announce(q, e, 'gone');
}
