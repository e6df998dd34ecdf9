// Enabling an outbox creates its logical replication slot, and PostgreSQL creates one only after
// every transaction holding a transaction id in the cluster has ended, in any database. A session
// left open elsewhere must not hang the owner's request without end: past OUTBOX_SLOT_WAIT the
// enable answers 503 outbox_unavailable saying why (naming nothing of the other database), the log
// names the session it waited on, nothing is installed (the slot comes first, so base.http_request
// cannot enqueue what no slot would capture), and the same request succeeds once that transaction
// has ended. Also here: an operator's cancel is not taken for that wait, two processes never enable
// side by side, and a message enqueued between the slot and the install on a re-enable is captured.
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { disableProjectOutbox, ensureOutboxEnabled, slotName } from '../../src/outbox/index.js';
import { childEnv, readTopic, spawnService } from '../helpers/delivery-tools.js';
import { eventually, sql, stack } from '../helpers/env.js';
import { freePort, startTestService, type TestProject, type TestService } from '../helpers/service.js';

describe('enabling an outbox while a transaction is open elsewhere in the cluster', () => {
  let svc: TestService;
  let project: TestProject;
  const logLines: string[] = [];

  beforeAll(async () => {
    svc = await startTestService({ env: { OUTBOX_SLOT_WAIT: '2s' } });
    svc.ctx.log = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (logLines.push(c.toString()), cb()) }));
    project = await svc.project('pro');
  });

  afterAll(async () => {
    await svc?.stop();
  });

  it('answers 503 after OUTBOX_SLOT_WAIT, logs the session it waited on, and enables once it has ended', async () => {
    const call = () => svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/enable`);
    // another database of the cluster (the admin one): a transaction that holds an xid, as an
    // application's session left idle in transaction does
    const other = new pg.Client({ connectionString: stack().adminDatabaseUrl, application_name: 'slot-wait-blocker' });
    await other.connect();
    let blocker: number;
    try {
      await other.query('begin');
      await other.query('select txid_current()');
      blocker = (await other.query('select pg_backend_pid() as pid')).rows[0].pid;

      const refused = await call();
      expect(refused.status).toBe(503);
      expect(refused.body.code).toBe('outbox_unavailable');
      expect(refused.body.message).toContain('transactions now open in the database cluster');
      // the owner learns why, but nothing of the other database or its session
      const otherDb = new URL(stack().adminDatabaseUrl).pathname.slice(1);
      expect(JSON.stringify(refused.body)).not.toContain('slot-wait-blocker');
      expect(JSON.stringify(refused.body)).not.toContain(String(blocker));
      expect(refused.body.message).not.toContain(`"${otherDb}"`);

      // the operator's log names it
      const line = logLines.map((l) => JSON.parse(l)).find((l) => l.msg?.startsWith('enabling the outbox: its replication slot waits'));
      expect(line).toBeTruthy();
      expect(line.level).toBe(40);
      expect(line.project).toBe(project.ref);
      expect(line.open_transactions.map((t: { pid: number }) => t.pid)).toContain(blocker);
      expect(line.open_transactions.find((t: { pid: number }) => t.pid === blocker).application).toBe('slot-wait-blocker');

      // nothing is half-enabled: no slot, no connector, the project not marked enabled
      const state = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox`);
      expect(state.body.outbox_enabled).toBe(false);
      const slots = await svc.ctx.db.query('select 1 from pg_replication_slots where slot_name = $1', [slotName(project.ref, svc.cfg.TOPIC_PREFIX)]);
      expect(slots.rowCount).toBe(0);
      // and schema base is not installed, so an enqueue fails loudly rather than going where no
      // slot captures it
      const db = new pg.Client({ connectionString: project.databaseUrl });
      await db.connect();
      try {
        expect((await db.query(`select 1 from pg_namespace where nspname = 'base'`)).rowCount).toBe(0);
        await expect(db.query(`select base.http_request('POST', 'https://example.com/', '{}'::jsonb, '{}'::jsonb)`)).rejects.toThrow(/base/);
      } finally {
        await db.end();
      }
    } finally {
      await other.query('rollback').catch(() => undefined);
      await other.end();
    }

    // the transaction has ended: the same request enables the outbox
    const enabled = await call();
    expect(enabled.status).toBe(200);
    expect(enabled.body.outbox_enabled).toBe(true);
  }, 120_000);

  it('reports an operator cancelling the slot\'s creation as that, not as a wait for open transactions', async () => {
    const p4 = await svc.project('pro');
    const other = new pg.Client({ connectionString: stack().adminDatabaseUrl });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('select txid_current()');
      const enabling = ensureOutboxEnabled(svc.ctx, p4.ref, { slotWaitMs: 60_000 }).then(
        () => null,
        (e: unknown) => e,
      );
      const pid = await eventually(async () => {
        // this project's database only: the open transaction holds up every slot creation in the
        // cluster, and another test file's enable may be waiting beside this one
        const r = await svc.ctx.db.query(
          `select pid from pg_stat_activity where application_name = 'integrations-outbox-install' and datname = $1 and query like '%pg_create_logical_replication_slot%' and state = 'active'`,
          [new URL(p4.databaseUrl).pathname.slice(1)],
        );
        return r.rows[0]?.pid as number | undefined;
      }, 30_000, 'the slot creation to be waiting');
      const before = logLines.length;
      await svc.ctx.db.query('select pg_cancel_backend($1)', [pid]);
      const err = (await enabling) as ApiError | null;
      // a failed enable, said plainly: not the answer that tells the owner to wait for transactions
      expect(err).toBeInstanceOf(ApiError);
      expect(err!.code).toBe('outbox_unavailable');
      expect(err!.message).not.toContain('transactions now open');
      const lines = logLines.slice(before).map((l) => JSON.parse(l)).filter((l) => l.project === p4.ref);
      expect(lines.find((l) => l.msg?.startsWith('enabling the outbox: its replication slot waits'))).toBeUndefined();
      const failed = lines.find((l) => l.msg === 'enabling the outbox failed');
      expect(failed?.err?.code).toBe('57014');
    } finally {
      await other.query('rollback').catch(() => undefined);
      await other.end();
    }
  }, 120_000);

  it('never lets a second process answer enabled while the first one waits for the slot', async () => {
    // a second process of the same deployment (same control database and topic prefix) that waits
    // without limit; before the project's outbox lock covered the enable, it found the first
    // process's slot listed (still being created) and answered 'enabled' before the slot existed
    const p2 = await svc.project('pro');
    const port = await freePort();
    let log = '';
    const child = spawnService(childEnv(svc, { ROLES: 'api', PORT: String(port), OUTBOX_SLOT_WAIT: '0', LOG_LEVEL: 'info' }), (c) => (log += c));
    const other = new pg.Client({ connectionString: stack().adminDatabaseUrl });
    await other.connect();
    try {
      await eventually(async () => log.includes('service ready'), 90_000, `the second process to start (${log.slice(-500)})`);
      await other.query('begin');
      await other.query('select txid_current()');
      const first = svc.api(p2.ownerToken, 'POST', `/v1/projects/${p2.ref}/outbox/enable`);
      await new Promise((r) => setTimeout(r, 500));
      let second: { status: number } | undefined;
      const secondP = fetch(`http://127.0.0.1:${port}/v1/projects/${p2.ref}/outbox/enable`, { method: 'POST', headers: { authorization: `Bearer ${p2.ownerToken}` } }).then(
        async (r) => (second = { status: r.status, body: await r.text() } as { status: number }),
      );
      expect((await first).status).toBe(503); // OUTBOX_SLOT_WAIT 2 s
      // the second goes on waiting (the transaction is still open): no answer, the project not enabled
      await new Promise((r) => setTimeout(r, 3_000));
      expect(second, JSON.stringify(second)).toBeUndefined();
      expect((await svc.ctx.db.query('select outbox_enabled_at from projects where ref = $1', [p2.ref])).rows[0].outbox_enabled_at).toBeNull();
      // and schema base is not there yet: an enqueue now would go where no slot captures it
      expect((await sql(p2.databaseUrl, `select 1 from pg_namespace where nspname = 'base'`)).rowCount).toBe(0);
      await other.query('rollback');
      expect((await secondP).status, `${JSON.stringify(second)} ${log.slice(-1500)}`).toBe(200);
    } finally {
      await other.query('rollback').catch(() => undefined);
      await other.end();
      child.kill('SIGKILL');
    }
  }, 120_000);

  it('captures what is enqueued between the slot and the install when base.outbox already exists (a re-enable, a recapture)', async () => {
    // After a disable (or in an operator's recapture) schema base and base.outbox stay, so
    // base.http_request keeps enqueueing while the enable creates the slot and then re-installs
    // the schema. A message committed in between is after the slot, so it must be captured: the
    // table joins the publication before the slot (pgoutput decides membership as of each change),
    // not in the install's transaction.
    const p3 = await svc.project('pro');
    // without limit: this file's OUTBOX_SLOT_WAIT (2 s) is for the tests above, and a transaction
    // open in another test file beside this one must not fail the setup
    await ensureOutboxEnabled(svc.ctx, p3.ref, { slotWaitMs: 0 });
    await disableProjectOutbox(svc.ctx, p3.ref);
    // hold the install (it takes this advisory lock first, in the project's database) so the window
    // stays open; an advisory lock takes no transaction id, so the slot's creation does not wait on it
    const holder = new pg.Client({ connectionString: p3.databaseUrl });
    await holder.connect();
    const marker = `between-slot-and-install-${Date.now()}`;
    let enabling: Promise<void> | undefined;
    try {
      await holder.query('begin');
      await holder.query('select pg_advisory_xact_lock(hashtext($1))', ['base-schema-install']);
      enabling = ensureOutboxEnabled(svc.ctx, p3.ref, { slotWaitMs: 0 });
      // created, not only listed: a slot is listed before its consistent point, and what commits
      // before that point is not decoded (the enable itself waits for the creation to return)
      await eventually(
        async () => (await sql(p3.databaseUrl, 'select 1 from pg_replication_slots where slot_name = $1 and confirmed_flush_lsn is not null', [slotName(p3.ref, svc.cfg.TOPIC_PREFIX)])).rowCount === 1,
        60_000,
        'the slot to be created',
      );
      // the install is still waiting on the lock: the window is open
      expect((await svc.ctx.db.query('select outbox_enabled_at from projects where ref = $1', [p3.ref])).rows[0].outbox_enabled_at).toBeNull();
      await sql(p3.databaseUrl, `select base.http_request('POST', 'https://example.com/hook', '{}'::jsonb, jsonb_build_object('marker', $1::text))`, [marker]);
    } finally {
      await holder.query('commit').catch(() => undefined);
      await holder.end();
    }
    await enabling;
    await eventually(
      async () => (await readTopic(svc, svc.ctx.topics.outbox)).some((m) => m.headers?.project?.toString() === p3.ref && m.value?.toString().includes(marker)),
      60_000,
      'the message enqueued between the slot and the install to reach the outbox topic',
    );
  }, 120_000);
});
