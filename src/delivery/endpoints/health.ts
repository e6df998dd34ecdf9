// The circuit breaker's bookkeeping, shared by every dispatcher process through the control database
// (endpoint_health; docs/delivery.md, "Endpoint protection"):
//
//   closed ──(≥ CIRCUIT_FAILURE_THRESHOLD endpoint faults in a CIRCUIT_WINDOW, and ≥ CIRCUIT_FAILURE_RATIO
//   │         of its attempts)──► open ──(probe_at passed, a message is held: the releaser sends one
//   │                                    probe)──► half_open ──(probe fails)──► open, cool-down doubled
//   └◄──────────────────────────────────────────────(probe succeeds: held messages released at a pace)
//
// Cheap when all is well: an attempt's outcome is counted only when it is an endpoint fault or its
// endpoint already has a row (recent failures, or not closed), so a healthy endpoint never touches
// the table. Counts are gathered in memory and flushed every FLUSH_MS in one statement.
//
// Every state change is announced with NOTIFY on CHANNEL, and every process LISTENs on one
// connection of its own: a circuit opened by one process stops the others' sends within
// milliseconds. Each process also reads the rows that matter (not closed, failures in the window,
// held messages) every POLL_ACTIVE_MS while any exists, else every POLL_IDLE_MS, which catches what
// a lost LISTEN connection missed and the held counts (which are not announced).
import type { AppContext } from '../../context.js';
import { recordOperatorAudit, type AuditAction } from '../../projects/index.js';
import { endpointCircuits, endpointCircuitTransitions, endpointHeldMessages } from '../../lib/metrics.js';
import { endpointId, isEndpointFault, type Endpoint } from './keys.js';
import type { AttemptOutcome } from '../../outbound/index.js';

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface EndpointView {
  project: string;
  endpoint: string;
  state: CircuitState;
  held: number;
  windowFailures: number;
}

const FLUSH_MS = 250;
export const CHANNEL = 'endpoint_health';
const POLL_ACTIVE_MS = 1000;
const POLL_IDLE_MS = 5000;
/**
 * `pairs`: the distinct (project_ref, endpoint) of held_messages, found by walking its index one
 * endpoint at a time (a loose index scan), so the cost follows the number of endpoints, not of
 * held messages. Read by every process's refresh and by the releaser.
 */
export const HELD_ENDPOINTS = `with recursive pairs as (
  (select project_ref, endpoint from held_messages order by project_ref, endpoint limit 1)
  union all
  select n.project_ref, n.endpoint from pairs p cross join lateral (
    select m.project_ref, m.endpoint from held_messages m
     where (m.project_ref, m.endpoint) > (p.project_ref, p.endpoint)
     order by m.project_ref, m.endpoint limit 1) n)`;

/** Who the audit trail names for what the service decided by itself. */
export const SERVICE_ACTOR = 'service (endpoint protection)';

interface Delta {
  e: Endpoint;
  attempts: number;
  failures: number;
  lastError: string | null;
}

type Ctx = Pick<AppContext, 'db' | 'cfg' | 'log'>;

export class EndpointHealth {
  #views = new Map<string, EndpointView>();
  /** endpoints whose state another process announced lately: their webhook config is read afresh */
  #announced = new Map<string, number>();
  #deltas = new Map<string, Delta>();
  #flushTimer: NodeJS.Timeout | undefined;
  #pollTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  #stopped = false;
  #listener: import('pg').PoolClient | undefined;
  readonly #log;

  constructor(private readonly ctx: Ctx) {
    this.#log = ctx.log.child({ component: 'endpoint-health' });
  }

  /** CIRCUIT_FAILURE_THRESHOLD 0: no circuit ever opens (rate limits still apply). */
  get enabled(): boolean {
    return this.ctx.cfg.CIRCUIT_FAILURE_THRESHOLD > 0;
  }

  start(): void {
    void this.#listen();
    const loop = async () => {
      if (this.#stopped) return;
      await this.refresh().catch((err) => this.#log.debug({ err }, 'reading endpoint health failed; trying again'));
      if (!this.#stopped) this.#pollTimer = setTimeout(loop, this.active ? POLL_ACTIVE_MS : POLL_IDLE_MS);
    };
    void loop();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#pollTimer);
    clearTimeout(this.#flushTimer);
    await this.flush().catch(() => {});
    const l = this.#listener;
    this.#listener = undefined;
    if (l) {
      await l.query(`unlisten ${CHANNEL}`).catch(() => {});
      l.release();
    }
  }

  /** One connection LISTENs for state changes; a lost one is replaced after a second (the poll covers the gap). */
  async #listen(): Promise<void> {
    if (this.#stopped) return;
    let client: import('pg').PoolClient | undefined;
    try {
      client = await this.ctx.db.connect();
      const c = client;
      const lost = () => {
        if (this.#listener !== c) return;
        this.#listener = undefined;
        c.release(true);
        setTimeout(() => void this.#listen(), 1000).unref();
      };
      c.on('error', lost);
      c.on('end', lost);
      c.on('notification', (n) => {
        try {
          const { p, e, s } = JSON.parse(n.payload ?? '{}');
          this.#announced.set(endpointId({ project: p, key: e }), Date.now());
          if (s === 'gone') this.#views.delete(endpointId({ project: p, key: e }));
          else this.#setState({ project: p, key: e }, s);
        } catch {
          // not ours: ignore
        }
      });
      await c.query(`listen ${CHANNEL}`);
      this.#listener = c;
      if (this.#stopped) await this.stop();
    } catch (err) {
      if (client && this.#listener !== client) client.release(true);
      this.#log.debug({ err }, 'listening for endpoint state changes failed; trying again');
      setTimeout(() => void this.#listen(), 1000).unref();
    }
  }

  /**
   * Whether the endpoint's state was announced within DELIVERY_CONFIG_TTL + 1 s: a webhook the
   * releaser just disabled may still be enabled in this process's config cache.
   */
  recentlyAnnounced(e: Endpoint): boolean {
    const id = endpointId(e);
    const at = this.#announced.get(id);
    if (at === undefined) return false;
    if (Date.now() - at <= this.ctx.cfg.DELIVERY_CONFIG_TTL + 1000) return true;
    this.#announced.delete(id);
    return false;
  }

  view(e: Endpoint): EndpointView | undefined {
    return this.#views.get(endpointId(e));
  }

  /** Anything to watch: a circuit not closed, failures in a window, or held messages. */
  get active(): boolean {
    return this.#views.size > 0;
  }

  views(): EndpointView[] {
    return [...this.#views.values()];
  }

  /** Reads every endpoint with a row or held messages. */
  /**
   * Reads every endpoint with a row or held messages. `held` is 1 when an endpoint has any
   * (HELD_ENDPOINTS); the gauge of held messages is the table's estimate.
   */
  async refresh(): Promise<void> {
    const started = Date.now();
    const r = await this.ctx.db.query(
      `${HELD_ENDPOINTS}
       select project_ref, endpoint, coalesce(h.state, 'closed') as state, coalesce(h.window_failures, 0) as window_failures,
              (p.endpoint is not null)::int as held,
              (select n_live_tup from pg_stat_user_tables where relname = 'held_messages' limit 1) as held_estimate
         from endpoint_health h
         full join pairs p using (project_ref, endpoint)`,
    );
    const next = new Map<string, EndpointView>();
    const states = { open: 0, half_open: 0 };
    for (const row of r.rows) {
      const id = endpointId({ project: row.project_ref, key: row.endpoint });
      const v: EndpointView = { project: row.project_ref, endpoint: row.endpoint, state: row.state, held: row.held, windowFailures: row.window_failures };
      // a state announced while this query ran is newer than what it read
      const at = this.#announced.get(id);
      const known = this.#views.get(id);
      if (at !== undefined && at >= started - 100 && known) v.state = known.state;
      next.set(id, v);
      if (v.state !== 'closed') states[v.state]++;
    }
    this.#views = next;
    for (const [id, at] of this.#announced) if (at < started - 10_000) this.#announced.delete(id);
    endpointCircuits.set({ state: 'open' }, states.open);
    endpointCircuits.set({ state: 'half_open' }, states.half_open);
    endpointHeldMessages.set(Number(r.rows[0]?.held_estimate ?? 0));
  }

  /** A message of this endpoint was held here: later ones wait behind it (first in, first out). */
  noteHeld(e: Endpoint): void {
    const id = endpointId(e);
    const v = this.#views.get(id) ?? { project: e.project, endpoint: e.key, state: 'closed' as const, held: 0, windowFailures: 0 };
    v.held++;
    this.#views.set(id, v);
  }

  /** Counts an ordinary attempt's outcome (not a probe: probeDone). */
  observe(e: Endpoint, outcome: AttemptOutcome): void {
    if (!this.enabled) return;
    const fault = isEndpointFault(outcome);
    const id = endpointId(e);
    if (!fault && !this.#views.has(id) && !this.#deltas.has(id)) return;
    const d = this.#deltas.get(id) ?? { e, attempts: 0, failures: 0, lastError: null };
    d.attempts++;
    if (fault) {
      d.failures++;
      d.lastError = outcome.error ?? null;
    }
    this.#deltas.set(id, d);
    this.#flushTimer ??= setTimeout(() => {
      this.#flushTimer = undefined;
      this.#flushing = this.#flushing.then(() => this.flush()).catch((err) => this.#log.warn({ err }, 'recording endpoint failures failed; these counts are lost'));
    }, FLUSH_MS);
  }

  /** Writes the gathered counts and opens the circuits whose window now crosses the threshold. */
  async flush(): Promise<void> {
    if (this.#deltas.size === 0) return;
    const deltas = [...this.#deltas.values()];
    this.#deltas = new Map();
    const { cfg } = this.ctx;
    const cols = [deltas.map((d) => d.e.project), deltas.map((d) => d.e.key), deltas.map((d) => d.e.webhookId), deltas.map((d) => d.attempts), deltas.map((d) => d.failures), deltas.map((d) => d.lastError)];
    const counted = await this.ctx.db.query(
      `with d as (select * from unnest($1::text[], $2::text[], $3::uuid[], $4::int[], $5::int[], $6::text[]) as d(project_ref, endpoint, webhook_id, attempts, failures, last_error))
       insert into endpoint_health as h (project_ref, endpoint, webhook_id, window_attempts, window_failures, last_error, last_failure_at)
       select d.project_ref, d.endpoint, d.webhook_id, d.attempts, d.failures, d.last_error, case when d.failures > 0 then now() end
         from d
        where (d.failures > 0 or exists (select 1 from endpoint_health x where x.project_ref = d.project_ref and x.endpoint = d.endpoint))
          -- a webhook of the endpoint's own project (endpoint_health references (project_ref, webhook_id)):
          -- a record of one project naming another's webhook never makes a row for it
          and (d.webhook_id is null or exists (select 1 from webhooks w where w.id = d.webhook_id and w.project_ref = d.project_ref))
       on conflict (project_ref, endpoint) do update set
         window_started_at = case when h.window_started_at < now() - $7 * interval '1 millisecond' then now() else h.window_started_at end,
         window_attempts = case when h.window_started_at < now() - $7 * interval '1 millisecond' then 0 else h.window_attempts end + excluded.window_attempts,
         window_failures = case when h.window_started_at < now() - $7 * interval '1 millisecond' then 0 else h.window_failures end + excluded.window_failures,
         last_error = coalesce(excluded.last_error, h.last_error),
         last_failure_at = coalesce(excluded.last_failure_at, h.last_failure_at),
         updated_at = now()
       returning h.project_ref, h.endpoint, h.state, h.window_attempts, h.window_failures`,
      [...cols, cfg.CIRCUIT_WINDOW],
    );
    const over = counted.rows.filter(
      (c) => c.state === 'closed' && c.window_failures >= cfg.CIRCUIT_FAILURE_THRESHOLD && c.window_failures >= cfg.CIRCUIT_FAILURE_RATIO * c.window_attempts,
    );
    if (over.length === 0) return this.#track(deltas);
    // opened only from closed: of two processes crossing the threshold at once, one opens it
    const r = await this.ctx.db.query(
      `update endpoint_health h
          set state = 'open', opened_at = now(), probe_at = now() + $3 * interval '1 millisecond', probe_claimed_at = null,
              failing_since = coalesce(h.failing_since, now()), updated_at = now()
         from unnest($1::text[], $2::text[]) as o(project_ref, endpoint)
        where h.project_ref = o.project_ref and h.endpoint = o.endpoint and h.state = 'closed'
       returning h.project_ref, h.endpoint, h.window_failures, h.window_attempts, h.last_error, h.probe_at`,
      [over.map((c) => c.project_ref), over.map((c) => c.endpoint), cfg.CIRCUIT_COOLDOWN],
    );
    for (const row of r.rows) {
      const e = { project: row.project_ref, key: row.endpoint };
      await announce(this.ctx.db, e, 'open');
      this.#setState(e, 'open');
      endpointCircuitTransitions.inc({ to: 'open' });
      const details = { failures: row.window_failures, attempts: row.window_attempts, window_ms: cfg.CIRCUIT_WINDOW, last_error: row.last_error, next_probe_at: row.probe_at };
      this.#log.warn({ project: e.project, endpoint: e.key, ...details }, 'circuit opened: no requests to this endpoint until a probe succeeds; its messages are held');
      await this.audit(e, 'endpoint.circuit_open', details);
    }
    this.#track(deltas);
  }

  /** Counts written: this process now counts these endpoints' successes too, until the next reading. */
  #track(deltas: Delta[]): void {
    for (const d of deltas) if (d.failures > 0 && !this.#views.has(endpointId(d.e))) this.#setState(d.e, 'closed');
  }

  /**
   * The outcome of a probe (the one attempt of a half-open circuit): an answer from the endpoint
   * that is not a fault (2xx, or a 4xx: it is up) closes the circuit; a fault opens it again for
   * longer; no answer at all (an unknown secret, a blocked address, an internal error) says nothing
   * of the endpoint, and the next held message is probed after the cool-down.
   */
  async probeDone(e: Endpoint, outcome: AttemptOutcome): Promise<void> {
    const { cfg } = this.ctx;
    const answered = outcome.outcome === 'delivered' || outcome.httpStatus != null;
    if (!isEndpointFault(outcome) && !answered) {
      // counted as a failed probe (it is not a success, and must not keep the endpoint from ever
      // being given up on), with the error recorded for the owner
      await this.ctx.db.query(
        `update endpoint_health set state = 'open', probe_claimed_at = null, failed_probes = failed_probes + 1, last_error = $4,
                probe_at = now() + least($3::float8 * power(2, failed_probes + 1), $5::float8) * interval '1 millisecond', updated_at = now()
          where project_ref = $1 and endpoint = $2 and state = 'half_open'`,
        [e.project, e.key, cfg.CIRCUIT_COOLDOWN, outcome.error ?? null, cfg.CIRCUIT_COOLDOWN_MAX],
      );
      await announce(this.ctx.db, e, 'open');
      this.#setState(e, 'open');
      return;
    }
    if (!isEndpointFault(outcome)) {
      const r = await this.ctx.db.query(
        `update endpoint_health set state = 'closed', opened_at = null, probe_at = null, probe_claimed_at = null, failed_probes = 0,
                failing_since = null, window_started_at = now(), window_attempts = 0, window_failures = 0, updated_at = now()
          where project_ref = $1 and endpoint = $2 and state = 'half_open' returning failing_since`,
        [e.project, e.key],
      );
      if (r.rowCount) {
        await announce(this.ctx.db, e, 'closed');
        this.#setState(e, 'closed');
        endpointCircuitTransitions.inc({ to: 'closed' });
        this.#log.info({ project: e.project, endpoint: e.key }, 'circuit closed: the probe succeeded; held messages are released at CIRCUIT_RELEASE_RATE');
        await this.audit(e, 'endpoint.circuit_close', { probe_outcome: outcome.outcome, http_status: outcome.httpStatus ?? null });
      }
      return;
    }
    const r = await this.ctx.db.query(
      `update endpoint_health
          set state = 'open', probe_claimed_at = null, failed_probes = failed_probes + 1, last_error = $3, last_failure_at = now(),
              probe_at = now() + least($4::float8 * power(2, failed_probes + 1), $5::float8) * interval '1 millisecond', updated_at = now()
        where project_ref = $1 and endpoint = $2 and state = 'half_open' returning probe_at, failed_probes`,
      [e.project, e.key, outcome.error ?? null, cfg.CIRCUIT_COOLDOWN, cfg.CIRCUIT_COOLDOWN_MAX],
    );
    if (r.rowCount) {
      await announce(this.ctx.db, e, 'open');
      this.#setState(e, 'open');
      endpointCircuitTransitions.inc({ to: 'open' });
      this.#log.warn({ project: e.project, endpoint: e.key, error: outcome.error, nextProbeAt: r.rows[0].probe_at }, 'circuit stays open: the probe failed');
      await this.audit(e, 'endpoint.circuit_open', { after_probe: true, last_error: outcome.error ?? null, failed_probes: r.rows[0].failed_probes, next_probe_at: r.rows[0].probe_at });
    }
  }

  #setState(e: Pick<Endpoint, 'project' | 'key'>, state: CircuitState): void {
    const id = endpointId(e);
    const v = this.#views.get(id) ?? { project: e.project, endpoint: e.key, state, held: 0, windowFailures: 0 };
    v.state = state;
    this.#views.set(id, v);
  }

  async audit(e: Pick<Endpoint, 'project' | 'key'>, action: AuditAction, details: Record<string, unknown>): Promise<void> {
    const resourceType = e.key.startsWith('webhook:') ? 'webhook' : 'endpoint';
    const resourceId = e.key.startsWith('webhook:') ? e.key.slice('webhook:'.length) : e.key;
    await recordOperatorAudit(this.ctx.db, SERVICE_ACTOR, e.project, { action, resourceType, resourceId, details: { endpoint: e.key, ...details } }).catch((err) =>
      this.#log.warn({ err, project: e.project, action }, 'writing the audit entry failed'),
    );
  }
}

/** Tells every process's EndpointHealth that an endpoint's state changed ('gone': its row was removed). */
export async function announce(q: Pick<AppContext['db'], 'query'>, e: Pick<Endpoint, 'project' | 'key'>, state: CircuitState | 'gone'): Promise<void> {
  await q.query('select pg_notify($1, $2)', [CHANNEL, JSON.stringify({ p: e.project, e: e.key, s: state })]);
}
