// Wake checks start resumes and do not wait for them (src/outbox/wake.ts): a slow resume holds
// neither the other projects' wakes nor the supervisor's checks. On the real stack, with two idle
// projects: project A's resume is held mid-way (its database's base.capture is locked, so
// clearing base.capture.idle waits), and a write to project B must still resume B and deliver its
// row while the checks go on. A, half-resumed meanwhile (its row claimed 'running', its connector
// resumed, its flag not yet cleared), keeps getting rows, so no check stops it during the hold.
// When the lock goes, A's resume ends with the flag cleared, and every row has arrived once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { eventually, sql, stack } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';
import type { TestProject } from '../helpers/service.js';

describe('wake resumes in the background', () => {
  let f: IdleCaptureFixture;
  let a: TestProject;
  let connectorA: string;

  beforeAll(async () => {
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '4s', CAPTURE_IDLE_REFRESH: '1h' });
    a = await f.svc.project('enterprise');
    await sql(a.databaseUrl, 'create table public.crates (id bigserial primary key, note text)');
    const r = await f.svc.api(a.ownerToken, 'POST', `/v1/projects/${a.ref}/webhooks`, { table: 'public.crates', events: ['INSERT'], url: `${f.receiver.url}/hook` });
    expect(r.status).toBe(201);
    connectorA = `outbox.${f.svc.cfg.TOPIC_PREFIX}.${a.ref}`;
  });

  afterAll(async () => {
    await f?.stop();
  });

  const stateOf = async (ref: string) => (await f.svc.ctx.db.query('select state from connector_supervision where project_ref = $1', [ref])).rows[0]?.state as string | undefined;
  const connectState = async (name: string) => ((await (await fetch(`${stack().connectUrl}/connectors/${name}/status`)).json()) as { connector: { state: string } }).connector.state;
  // a session of A's database waiting for a lock in the resume's statement (setCaptureIdle)
  const resumeHeld = async () =>
    (await sql(a.databaseUrl, `select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database() and query like '%update base.capture set idle%'`)).rowCount! > 0;

  it("a resume held mid-way holds neither another project's wake nor the supervisor's check", async () => {
    await eventually(async () => (await stateOf(a.ref)) === 'idle' && (await f.supervised())?.state === 'idle', 90_000, 'both projects idle');
    const lock = new pg.Client({ connectionString: a.databaseUrl });
    lock.on('error', () => {});
    await lock.connect();
    try {
      await lock.query('begin');
      // A table lock, not `select ... for update`: a row lock gives the transaction an xid, and
      // while a transaction with an xid stays open, PostgreSQL's pg_create_logical_replication_slot
      // waits for it in every database of the cluster, so every other test file enabling an outbox
      // meanwhile would hang (CI saw dashboard-capture's beforeAll time out so). EXCLUSIVE still
      // stops the resume's update of base.capture and lets reads of the flag through.
      await lock.query('lock table base.capture in exclusive mode');
      await sql(a.databaseUrl, 'insert into public.crates (note) values ($1)', ['wakes A']);
      // A's resume: its row claimed, Connect resumed the connector, then it waits for the lock
      await eventually(resumeHeld, 30_000, "A's resume held at base.capture");
      expect(await stateOf(a.ref)).toBe('running');
      await eventually(async () => (await connectState(connectorA)) === 'RUNNING', 30_000, "A's connector resumed");
      await eventually(async () => f.notes().includes('wakes A'), 60_000, "A's row, captured by its running connector");
      // A keeps sending (a row a second, well within CAPTURE_IDLE_AFTER): no check stops it, so the
      // only session waiting for the lock is the resume's
      let n = 0;
      const keepA = setInterval(() => void sql(a.databaseUrl, 'insert into public.crates (note) values ($1)', [`A busy ${n++}`]).catch(() => undefined), 1_000);
      try {
        // the supervisor's checks go on beside the held resume
        const checked = async () => (await f.svc.ctx.db.query('select checked_at from connector_supervisor where id = 1')).rows[0].checked_at as Date;
        const t0 = await checked();
        await eventually(async () => (await checked()) > t0, 30_000, 'a check after the hold began');

        // B: idle, written to, resumed, while A's resume still waits
        await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, 'B idle');
        await f.insert('wakes B');
        await eventually(async () => (await f.supervised()).state === 'running', 30_000, "B's wake, beside A's held resume");
        await eventually(async () => f.notes().includes('wakes B'), 60_000, "B's row");
        expect(await resumeHeld()).toBe(true); // still held: B's wake did not wait for it
        expect(await stateOf(a.ref)).toBe('running'); // and A was neither stopped nor set back meanwhile
      } finally {
        clearInterval(keepA);
      }
    } finally {
      await lock.query('rollback').catch(() => undefined);
      await lock.end();
    }
    // A's resume ends: its flag is cleared (A sent a row under a second ago, so no stop has set it again)
    await eventually(async () => (await sql(a.databaseUrl, 'select idle from base.capture')).rows[0].idle === false, 3_000, "A's flag cleared by its resume");
    await sql(a.databaseUrl, 'insert into public.crates (note) values ($1)', ['A after the hold']);
    await eventually(async () => f.notes().includes('A after the hold'), 60_000, "A's row after the hold");
    expect(f.notes().filter((n) => n === 'wakes A' || n === 'wakes B' || n === 'A after the hold').sort()).toEqual(['A after the hold', 'wakes A', 'wakes B']);
  });
});
