// GET /health: 200 {"status":"ok"} only when Postgres, Kafka, Kafka Connect and every registered
// connector are healthy; 503 with the failing parts otherwise, each saying what waits for it.
// Cheap enough for a load balancer: one query, one metadata request, one Connect request
// (GET /connectors?expand=status) and one read of what the connector supervisor recorded.
//
// Two answers from the one report. On the public API port: the parts and counts only (no project
// ref, no driver or Connect error text, no host names, no process names): until 2026-11-29 it
// listed every project with an outbox by ref, with its connector's last failure, to anyone
// (found by review). The whole report, per project, is served beside the metrics on METRICS_PORT
// (loopback by default; src/lib/metrics.ts), where operators look at 3 a.m.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';

type Check = { ok: boolean; detail?: string };

interface ConnectorCheck extends Check {
  /** the supervisor's view: running | idle | restarting | failing | waiting_for_database | missing */
  state?: string;
  restarts?: number;
  total_restarts?: number;
  last_restart_at?: string | null;
  next_restart_at?: string | null;
  last_failure?: string | null;
  slot?: { retained_wal_bytes: number | null; pending_bytes: number | null; wal_status: string | null; safe_wal_bytes: number | null; capture_lag_seconds: number | null; warning?: string };
}

async function timed<T extends Check>(p: Promise<T>, ms = 3000): Promise<T | Check> {
  return Promise.race([p, new Promise<Check>((r) => setTimeout(() => r({ ok: false, detail: `no answer in ${ms}ms` }), ms).unref())]).catch((e) => ({
    ok: false,
    detail: (e as Error).message,
  }));
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Each part that can be down: what it is, and what waits for it (both answers say this; the public one without the error). */
const PARTS = {
  postgres: ['control database unreachable', 'the Management API, sign-ins, and recording delivery outcomes wait for it; deliveries already in Kafka wait uncommitted and resume when it is back'],
  kafka: ['Kafka unreachable', "capture and delivery wait for it; committed messages stay in the projects' replication slots"],
  connect: ['Kafka Connect unreachable', 'capture waits for it; committed messages stay in the replication slots'],
} as const;
/** The detail of a part that is down: with the error that said so (the metrics port), or without (it may name hosts). */
const down = (part: keyof typeof PARTS, error?: string) => `${PARTS[part][0]}${error === undefined ? '' : ` (${error})`}: ${PARTS[part][1]}`;

export async function healthReport(ctx: AppContext) {
  const admin = ctx.kafka.admin();
  const [postgres, kafka, statuses] = await Promise.all([
    timed(ctx.db.query('select 1').then(() => ({ ok: true }))),
    timed(
      (async () => {
        await admin.connect();
        try {
          await admin.fetchTopicMetadata({ topics: [ctx.topics.outbox] });
          return { ok: true };
        } finally {
          await admin.disconnect();
        }
      })(),
    ),
    Promise.race([ctx.connect.statuses(), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer in 3000ms')), 3000).unref())]).catch((e: Error) => e),
  ]);
  if (!postgres.ok) postgres.detail = down('postgres', postgres.detail);
  if (!kafka.ok) kafka.detail = down('kafka', kafka.detail);
  const connect: Check = statuses instanceof Error ? { ok: false, detail: down('connect', statuses.message) } : { ok: true };

  const connectors: Record<string, ConnectorCheck> = {};
  let supervisor: Check & { holder?: string; last_check_seconds_ago?: number } = { ok: true };
  if (postgres.ok) {
    const rows = (
      await ctx.db.query(
        `select p.ref, p.connector_name, s.state, s.restarts, s.total_restarts, s.last_restart_at, s.next_restart_at, s.last_failure,
                s.slot_retained_bytes, s.slot_pending_bytes, s.slot_wal_status, s.slot_safe_wal_bytes, s.capture_lag_seconds
           from projects p left join connector_supervision s on s.project_ref = p.ref
          where p.outbox_enabled_at is not null and p.connector_name is not null order by p.ref`,
      )
    ).rows;
    const sup = (await ctx.db.query(`select holder, extract(epoch from now() - checked_at)::float8 as ago from connector_supervisor`)).rows[0];
    const stale = !sup || sup.ago > Math.max(30, (3 * ctx.cfg.CONNECTOR_SUPERVISE_INTERVAL) / 1000);
    // informational: an api-only deployment may run its dispatchers elsewhere; without any, nothing restarts a failed connector
    supervisor = stale
      ? { ok: rows.length === 0, detail: sup ? `no process has checked the connectors for ${Math.round(sup.ago)}s: is a process with the dispatcher role running?` : 'no process has supervised the connectors yet (the dispatcher role does)', ...(sup ? { holder: sup.holder, last_check_seconds_ago: Math.round(sup.ago) } : {}) }
      : { ok: true, holder: sup.holder, last_check_seconds_ago: Math.round(sup.ago) };
    for (const r of rows) {
      const live = statuses instanceof Error ? undefined : statuses.get(r.connector_name);
      let check: ConnectorCheck;
      if (statuses instanceof Error) check = { ok: false, detail: 'unknown: Kafka Connect unreachable' };
      else if (!live) check = { ok: false, detail: 'not registered' };
      else {
        // a project without messages for CAPTURE_IDLE_AFTER has its connector stopped on purpose (idle-capture.ts)
        const ok = (live.connector === 'RUNNING' && live.tasks.length > 0 && live.tasks.every((t) => t.state === 'RUNNING')) || (live.connector === 'STOPPED' && r.state === 'idle');
        check = { ok, ...(ok ? {} : { detail: `${live.connector} / ${live.tasks.map((t) => t.state).join(',') || 'no tasks'}` }) };
      }
      if (r.state) {
        Object.assign(check, {
          state: r.state,
          restarts: r.restarts,
          total_restarts: r.total_restarts,
          last_restart_at: iso(r.last_restart_at),
          next_restart_at: iso(r.next_restart_at),
          last_failure: r.last_failure,
        });
        if (!check.ok && r.state === 'waiting_for_database') check.detail += ': its database does not accept connections; capture waits, and the connector is restarted when it does';
        if (!check.ok && r.state === 'failing') check.detail += `: keeps failing after ${r.restarts} restarts (next ${iso(r.next_restart_at)}): ${r.last_failure ?? ''}`;
        if (!check.ok && r.state === 'restarting') check.detail += ': restarted by the supervisor';
      }
      if (r.slot_wal_status !== null || r.slot_retained_bytes !== null) {
        const retained = r.slot_retained_bytes === null ? null : Number(r.slot_retained_bytes);
        check.slot = {
          retained_wal_bytes: retained,
          pending_bytes: r.slot_pending_bytes === null ? null : Number(r.slot_pending_bytes),
          wal_status: r.slot_wal_status,
          safe_wal_bytes: r.slot_safe_wal_bytes === null ? null : Number(r.slot_safe_wal_bytes),
          capture_lag_seconds: r.capture_lag_seconds,
        };
        if (r.slot_wal_status === 'lost') {
          check.ok = false;
          check.slot.warning = 'the replication slot is lost: changes it had not captured are gone (README, Operations: a lost slot)';
        } else if (r.slot_wal_status === 'missing') {
          check.ok = false;
          check.slot.warning = 'the replication slot does not exist';
        } else if (check.slot.safe_wal_bytes !== null && check.slot.safe_wal_bytes < ctx.cfg.SLOT_RETAINED_WAL_WARN) {
          check.slot.warning = `the slot is ${check.slot.safe_wal_bytes} bytes from max_slot_wal_keep_size: past it, it is invalidated and what it has not captured is lost`;
        } else if ((retained ?? 0) >= ctx.cfg.SLOT_RETAINED_WAL_WARN || r.slot_wal_status === 'unreserved') {
          check.slot.warning = `the slot retains ${retained} bytes of WAL (SLOT_RETAINED_WAL_WARN ${ctx.cfg.SLOT_RETAINED_WAL_WARN}${r.slot_wal_status === 'unreserved' ? '; past max_slot_wal_keep_size, about to be lost' : ''})`;
        }
      }
      connectors[r.ref] = check;
    }
  }
  const ok = postgres.ok && kafka.ok && connect.ok && Object.values(connectors).every((c) => c.ok);
  return { ok, body: { status: ok ? 'ok' : 'unavailable', checks: { postgres, kafka, connect, connectors, supervisor } } };
}

type Report = Awaited<ReturnType<typeof healthReport>>['body'];

/**
 * The report as the public port shows it: each part ok or not (with what waits for it), the
 * connectors counted, never named. Where the detail is: the metrics port's /health.
 */
export function publicHealth(body: Report) {
  const part = (k: keyof typeof PARTS) => (body.checks[k].ok ? { ok: true } : { ok: false, detail: down(k) });
  const all = Object.values(body.checks.connectors);
  const failing = all.filter((c) => !c.ok).length;
  const warnings = all.filter((c) => c.slot?.warning).length;
  const sup = body.checks.supervisor;
  return {
    status: body.status,
    checks: {
      postgres: part('postgres'),
      kafka: part('kafka'),
      connect: part('connect'),
      connectors: { ok: failing === 0, total: all.length, failing, slot_warnings: warnings },
      supervisor: sup.ok ? { ok: true } : { ok: false, detail: 'no process has checked the connectors lately: is a process with the dispatcher role running?' },
    },
    ...(body.status === 'ok' ? {} : { detail: 'which connector and why: GET /health on the metrics port (METRICS_PORT), or GET /v1/projects/{ref}/outbox for the project owner' }),
  };
}

export function registerHealth(app: FastifyInstance, ctx: AppContext) {
  app.get('/health', { config: { access: 'public' }, schema: { tags: ['operations'], summary: 'Health of the service and every part it depends on (parts and counts; no project data)' } }, async (_req, reply) => {
    const { ok, body } = await healthReport(ctx);
    return reply.code(ok ? 200 : 503).send(publicHealth(body));
  });
}
