// The fixture of the idle-capture tests: a service whose supervisor runs every second, a project
// with a webhook on public.crates pointing at a receiver (so its outbox, slot and connector exist),
// and what those tests look at: Connect's state of the connector, the supervisor's record, the
// notes the receiver got. `env` sets the capture timings under test.
import { expect } from 'vitest';
import pg from 'pg';
import { slotName } from '../../src/outbox/index.js';
import { QUIET_AFTER_MS } from '../../src/outbox/quiet-database.js';
import { LOCK_KEY } from '../../src/outbox/supervisor.js';
import { dbUrl, eventually, sql, stack } from './env.js';
import { Receiver } from './receiver.js';
import { startTestService, type TestProject, type TestService } from './service.js';

export interface IdleCaptureFixture {
  svc: TestService;
  project: TestProject;
  receiver: Receiver;
  /** the project's connector's name */
  connector: string;
  /** Connect's state of the project's connector (RUNNING, STOPPED, …) */
  connectState(): Promise<string>;
  /** the supervisor's row: state, stopped_at, resumed_at */
  supervised(): Promise<{ state: string; stopped_at: Date | null; resumed_at: Date | null }>;
  /** the `note` of every row the receiver got */
  notes(): string[];
  insert(note: string): Promise<unknown>;
  /**
   * What the service asked Connect of the project's connector, in order: each stop and resume, and
   * each config written (its poll.interval.ms). The calls are the service's own, to the real Connect.
   */
  connectCalls: { op: 'stop' | 'resume' | 'config'; poll?: string }[];
  /** whether the project's slot has a walsender */
  walsender(): Promise<boolean | undefined>;
  /**
   * Takes supervision away from the service, the way another process would: ends the session that
   * holds the supervisor's advisory lock and holds the lock itself until the returned function is
   * called. Meanwhile nothing stops, resumes or restarts the connector behind the test's back.
   */
  holdSupervision(): Promise<() => Promise<void>>;
  /**
   * Waits for the project to be idle and settled: the same stop for QUIET_AFTER plus a check. A
   * stop can be followed by a wake for nothing: a write made before it on a connection that stays
   * open (the service's own pool creating the webhook's trigger, say) may have its counters
   * published up to 10 s later (PGSTAT_IDLE_INTERVAL), after W0 was read; CI saw one 7 s after
   * the stop. Once the stop has stood that long, every write before it is counted in W0. Returns
   * that stop's stopped_at.
   */
  settledIdle(): Promise<Date>;
  stop(): Promise<void>;
}

export async function startIdleCapture(env: Record<string, string>): Promise<IdleCaptureFixture> {
  const receiver = new Receiver();
  await receiver.start();
  const svc = await startTestService({ roles: ['api', 'dispatcher', 'projector'], env: { CONNECTOR_SUPERVISE_INTERVAL: '1s', CAPTURE_WAKE_INTERVAL: '500ms', ...env } });
  const project = await svc.project('enterprise');
  await sql(project.databaseUrl, 'create table public.crates (id bigserial primary key, note text)');
  const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/webhooks`, { table: 'public.crates', events: ['INSERT'], url: `${receiver.url}/hook` });
  expect(r.status).toBe(201);
  const connector = `outbox.${svc.cfg.TOPIC_PREFIX}.${project.ref}`;
  const connectCalls: IdleCaptureFixture['connectCalls'] = [];
  const connect = svc.ctx.connect;
  const [upsert, setTarget] = [connect.upsert.bind(connect), connect.setTarget.bind(connect)];
  connect.upsert = async (name, config) => {
    if (name === connector) connectCalls.push({ op: 'config', poll: config['poll.interval.ms'] });
    return upsert(name, config);
  };
  connect.setTarget = async (name, target) => {
    if (name === connector) connectCalls.push({ op: target });
    return setTarget(name, target);
  };
  const supervised: IdleCaptureFixture['supervised'] = async () =>
    (await svc.ctx.db.query('select state, stopped_at, resumed_at from connector_supervision where project_ref = $1', [project.ref])).rows[0];
  return {
    connectCalls,
    svc,
    project,
    receiver,
    connector,
    connectState: async () => ((await (await fetch(`${stack().connectUrl}/connectors/${connector}/status`)).json()) as { connector: { state: string } }).connector.state,
    supervised,
    notes: () => receiver.requests.map((q) => JSON.parse(q.body).record.note as string),
    insert: (note) => sql(project.databaseUrl, 'insert into public.crates (note) values ($1)', [note]),
    walsender: async () => (await sql(project.databaseUrl, 'select active from pg_replication_slots where slot_name = $1', [slotName(project.ref, svc.cfg.TOPIC_PREFIX)])).rows[0]?.active,
    async holdSupervision() {
      const c = new pg.Client({ connectionString: dbUrl(svc.controlDb) });
      c.on('error', () => {});
      await c.connect();
      const holder = `select pid from pg_locks where locktype = 'advisory' and objid = $1 and objsubid = 1 and granted and database = (select oid from pg_database where datname = current_database())`;
      await eventually(async () => (await c.query(holder, [LOCK_KEY])).rowCount! > 0, 30_000, 'the service to supervise');
      await c.query(`select pg_terminate_backend(pid) from (${holder}) h`, [LOCK_KEY]);
      await c.query('select pg_advisory_lock($1)', [LOCK_KEY]);
      return async () => {
        await c.end();
      };
    },
    async settledIdle() {
      let stoppedAt = new Date(0);
      await eventually(async () => {
        const s = await supervised();
        if (s?.state !== 'idle') return false;
        const same = s.stopped_at!.getTime() === stoppedAt.getTime();
        stoppedAt = s.stopped_at!;
        if (!same) await new Promise((r) => setTimeout(r, QUIET_AFTER_MS + 2000));
        return same;
      }, 180_000, 'the project to stay idle');
      return stoppedAt;
    },
    async stop() {
      await svc.stop();
      await receiver.stop();
    },
  };
}
