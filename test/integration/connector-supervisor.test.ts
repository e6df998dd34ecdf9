// The connector supervisor against the real stack: a project's database goes away (it stops
// accepting connections and its walsender is cut off, which fails the Debezium task for real, the
// way a database restart does); the database comes back and, with no person involved, the task is
// restarted and what is committed arrives. A connector that keeps failing while its database is up (its publication dropped) backs
// off, is reported as failing in /health, the Management API and metrics, and heals once the cause
// is fixed. Two supervisors on one control database: only one acts.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../src/lib/metrics.js';
import { ConnectorSupervisor, restartBackoffMs } from '../../src/outbox/supervisor.js';
import { slotName } from '../../src/outbox/index.js';
import { eventually, sql, stack } from '../helpers/env.js';
import { Receiver } from '../helpers/receiver.js';
import { runAdmin } from '../helpers/delivery-tools.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

const admin = () => new pg.Client({ connectionString: stack().adminDatabaseUrl });

describe('connector supervision', () => {
  let svc: TestService;
  let project: TestProject;
  let dbName: string;
  const receiver = new Receiver();

  const connectorName = () => `outbox.${svc.cfg.TOPIC_PREFIX}.${project.ref}`;
  const connectStatus = async () => (await (await fetch(`${stack().connectUrl}/connectors/${connectorName()}/status`)).json()) as { connector: { state: string }; tasks: { state: string; trace?: string }[] };
  const insert = (note: string) => sql(project.databaseUrl, 'insert into public.parcels (note) values ($1)', [note]);
  const notes = () => receiver.requests.map((r) => JSON.parse(r.body).record.note as string);
  const restartsCounted = async () => {
    const m = (await registry.getSingleMetric('integrations_connector_restarts_total')!.get()).values.find((v) => v.labels.kind === 'task');
    return m?.value ?? 0;
  };

  beforeAll(async () => {
    await receiver.start();
    svc = await startTestService({
      roles: ['api', 'dispatcher', 'projector'],
      env: { CONNECTOR_SUPERVISE_INTERVAL: '1s', CONNECTOR_RESTART_REPORT_AFTER: '2' },
    });
    project = await svc.project('enterprise');
    dbName = new URL(project.databaseUrl).pathname.slice(1);
    await sql(project.databaseUrl, 'create table public.parcels (id bigserial primary key, note text)');
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/webhooks`, { table: 'public.parcels', events: ['INSERT'], url: `${receiver.url}/hook` });
    expect(r.status).toBe(201);
    await insert('before');
    await eventually(async () => notes().includes('before'), 60_000, 'the first delivery');
  });

  afterAll(async () => {
    const c = admin();
    await c.connect();
    await c.query(`alter database ${pg.escapeIdentifier(dbName)} allow_connections true`).catch(() => {});
    await c.end();
    await svc?.stop();
    await receiver.stop();
  });

  it('restarts a task that failed while its database was away, once the database is back; nothing committed is lost', async () => {
    const before = await restartsCounted();
    // the database stops accepting connections and the connector's walsender is cut off, as in a restart
    const c = admin();
    await c.connect();
    try {
      await c.query(`alter database ${pg.escapeIdentifier(dbName)} allow_connections false`);
      await c.query('select pg_terminate_backend(active_pid) from pg_replication_slots where slot_name = $1 and active_pid is not null', [slotName(project.ref, svc.cfg.TOPIC_PREFIX)]);
      await eventually(async () => (await connectStatus()).tasks.some((t) => t.state === 'FAILED'), 120_000, 'the task to fail while its database refuses connections');
      // the supervisor sees the database is away and waits, without spending a restart
      await eventually(async () => (await svc.detailedHealth()).body.checks.connectors[project.ref]?.state === 'waiting_for_database', 30_000, 'waiting_for_database in /health');
      const health = (await svc.detailedHealth()).body;
      expect(health.status).toBe('unavailable');
      expect(health.checks.connectors[project.ref].detail).toContain('its database does not accept connections');
      expect(await restartsCounted()).toBe(before);
      const api = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox`);
      expect(api.body.connector).toMatchObject({ state: 'RUNNING', supervised_state: 'waiting_for_database' }); // Connect keeps the connector RUNNING; its task is FAILED
      expect(api.body.connector.tasks).toEqual([{ id: 0, state: 'FAILED' }]);
      expect(api.body.connector.last_failure).toBeTruthy();

      // back: rows committed from now on must arrive, with no restart by anyone but the supervisor
      await c.query(`alter database ${pg.escapeIdentifier(dbName)} allow_connections true`);
    } finally {
      await c.end();
    }
    await insert('while the task was failed');
    await eventually(async () => notes().includes('while the task was failed'), 60_000, 'the row committed after the database came back');
    expect(await restartsCounted()).toBeGreaterThan(before);
    await eventually(async () => (await svc.detailedHealth()).body.checks.connectors[project.ref]?.state === 'running', 30_000, 'running in /health');
    const health = (await svc.detailedHealth()).body;
    expect(health.checks.connectors[project.ref]).toMatchObject({ ok: true, state: 'running' });
    expect(health.checks.connectors[project.ref].total_restarts).toBeGreaterThanOrEqual(1);
    expect(health.checks.supervisor).toMatchObject({ ok: true });
    // the slot as the supervisor read it (the local stack limits max_slot_wal_keep_size, so safe_wal_bytes is known)
    await eventually(async () => typeof (await svc.detailedHealth()).body.checks.connectors[project.ref].slot?.retained_wal_bytes === 'number', 60_000, 'slot figures');
    const slot = (await svc.detailedHealth()).body.checks.connectors[project.ref].slot;
    expect(slot).toMatchObject({ wal_status: expect.stringMatching(/reserved|extended/), retained_wal_bytes: expect.any(Number), pending_bytes: expect.any(Number), safe_wal_bytes: expect.any(Number) });
    const retainedMax = (await registry.getSingleMetric('integrations_replication_slot_retained_wal_bytes_max')!.get()).values[0]?.value;
    expect(retainedMax).toBeGreaterThan(0);
    expect(notes().filter((n) => n === 'before')).toHaveLength(1);
  });

  it('a connector that keeps failing while its database is up backs off, is reported as failing, and heals when the cause is fixed', async () => {
    const pub = slotName(project.ref, svc.cfg.TOPIC_PREFIX);
    await sql(project.databaseUrl, `drop publication ${pg.escapeIdentifier(pub)}`);
    await sql(project.databaseUrl, 'select pg_terminate_backend(active_pid) from pg_replication_slots where slot_name = $1 and active_pid is not null', [pub]);
    // One /health answer is asserted on: a second request may land between two failures.
    let failing: any;
    await eventually(
      async () => {
        failing = (await svc.detailedHealth()).body.checks.connectors[project.ref];
        // state is the supervisor's record, ok what Connect says now: a restart at the backoff
        // shows the task RUNNING for a moment before it fails again
        return failing?.state === 'failing' && failing.ok === false;
      },
      120_000,
      'failing after CONNECTOR_RESTART_REPORT_AFTER restarts',
    );
    expect(failing.ok).toBe(false);
    expect(failing.restarts).toBeGreaterThanOrEqual(2);
    expect(failing.detail).toContain('keeps failing');
    expect(failing.last_failure).toMatch(/publication/i);
    // backed off: the next restart is the doubled delay after the last one, not at the next check
    const gap = Date.parse(failing.next_restart_at) - Date.parse(failing.last_restart_at);
    expect(gap).toBe(restartBackoffMs(failing.restarts, svc.cfg.CONNECTOR_RESTART_BACKOFF_MAX));
    expect(gap).toBeGreaterThanOrEqual(10_000);
    // the gauge follows the same state, which a restart at the backoff may briefly leave
    await eventually(
      async () => (await registry.getSingleMetric('integrations_connectors')!.get()).values.find((v) => v.labels.state === 'failing')?.value === 1,
      30_000,
      'the failing gauge',
    );

    // fixed: the publication is back; the next restart at the backoff brings the connector up
    await sql(project.databaseUrl, `create publication ${pg.escapeIdentifier(pub)} for table base.outbox with (publish = 'insert')`);
    await insert('after the publication came back');
    await eventually(async () => notes().includes('after the publication came back'), 120_000, 'delivery after the cause was fixed');
    await eventually(async () => (await svc.detailedHealth()).body.checks.connectors[project.ref]?.state === 'running', 30_000, 'running again');
  });

  it('npm run admin -- recapture: a new slot and connector, capture from now, in the audit trail', async () => {
    const slot = slotName(project.ref, svc.cfg.TOPIC_PREFIX);
    const before = (await sql(project.databaseUrl, 'select catalog_xmin::text as x from pg_replication_slots where slot_name = $1', [slot])).rows[0];
    expect(before).toBeDefined();
    const out = await runAdmin(svc, ['recapture', '--ref', project.ref]);
    expect(out).toMatchObject({ ref: project.ref, recaptured: true });
    await insert('after recapture');
    await eventually(async () => notes().includes('after recapture'), 60_000, 'delivery after recapture');
    const audit = await svc.ctx.db.query("select operator, details from audit_log where project_ref = $1 and action = 'outbox.recapture'", [project.ref]);
    expect(audit.rows).toHaveLength(1);
    expect(audit.rows[0].details.capture_from).toBe(out.capture_from);
  });

  it('only one process supervises: a second one does not take the lock while the first holds it', async () => {
    const second = new ConnectorSupervisor(svc.ctx);
    await second.check();
    expect(second.leading).toBe(false);
    const holder = (await svc.ctx.db.query('select holder from connector_supervisor')).rows[0].holder;
    expect(holder).toMatch(new RegExp(`:${process.pid}$`));
  });
});
