// Housekeeping deletes ledger rows, marks of released holds and finished callback rows past LEDGER_RETENTION, keeps recent
// ones and unfinished callbacks, and only one process runs it at a time.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallbacks } from '../../src/delivery/callbacks/consumer.js';
import { encodeEvent } from '../../src/delivery/events.js';
import { housekeep } from '../../src/delivery/housekeeping.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';

const DAY = 86_400_000;

describe('housekeeping', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.stop();
  });

  async function ledgerRow(ageDays: number, id = randomUUID(), project = 'p') {
    await svc.ctx.db.query(
      `insert into delivery_ledger (project_ref, message_id, run, attempt, outcome, final, recorded_at) values ($3, $1, 1, 1, 'delivered', true, now() - make_interval(secs => $2))`,
      [id, (ageDays * DAY) / 1000, project],
    );
    return id;
  }
  async function callbackRow(ageDays: number, status: string) {
    const id = randomUUID();
    await svc.ctx.db.query(
      `insert into delivery_callbacks (message_id, run, project_ref, function, payload, status, updated_at) values ($1, 1, 'p', 'public.cb', '{}', $2, now() - make_interval(secs => $3))`,
      [id, status, (ageDays * DAY) / 1000],
    );
    return id;
  }

  it('deletes what is past the retention in slices and keeps the rest', async () => {
    // 12,000 old rows: more than two slices of 5,000
    await svc.ctx.db.query(
      `insert into delivery_ledger (project_ref, message_id, run, attempt, outcome, final, recorded_at)
       select case when i % 2 = 0 then 'p' else 'q' end, gen_random_uuid(), 1, 1, 'delivered', true, now() - interval '30 days' from generate_series(1, 12000) i`,
    );
    const fresh = await ledgerRow(1);
    const borderline = await ledgerRow(7.5);
    // one message id in two projects: the old row goes, the fresh one of the other project stays
    const shared = await ledgerRow(30, randomUUID(), 'p');
    await ledgerRow(1, shared, 'q');
    const oldDone = await callbackRow(9, 'ok');
    const oldFailed = await callbackRow(9, 'failed');
    const oldPending = await callbackRow(9, 'pending');
    const freshDone = await callbackRow(1, 'ok');
    // the marks of holds put back (held_releases) age like the ledger
    const { ref } = await svc.project();
    const release = async (ageDays: number) => {
      const id = randomUUID();
      await svc.ctx.db.query(
        `insert into held_releases (project_ref, message_id, run, attempt, released_at) values ($1, $2, 1, 1, now() - make_interval(secs => $3))`,
        [ref, id, (ageDays * DAY) / 1000],
      );
      return id;
    };
    await release(9);
    const freshRelease = await release(1);

    const r = await housekeep(svc.ctx, 8 * DAY);
    expect(r).toEqual({ ran: true, ledger: 12001, releases: 1, callbacks: 2 });
    expect((await svc.ctx.db.query('select message_id from held_releases where project_ref = $1', [ref])).rows).toEqual([{ message_id: freshRelease }]);
    const ledger = (await svc.ctx.db.query('select message_id from delivery_ledger')).rows.map((x) => x.message_id).sort();
    expect(ledger).toEqual([fresh, borderline, shared].sort());
    expect((await svc.ctx.db.query('select project_ref from delivery_ledger where message_id = $1', [shared])).rows).toEqual([{ project_ref: 'q' }]);
    const callbacks = (await svc.ctx.db.query('select message_id from delivery_callbacks')).rows.map((x) => x.message_id).sort();
    expect(callbacks).toEqual([oldPending, freshDone].sort());
    expect(callbacks).not.toContain(oldDone);
    expect(callbacks).not.toContain(oldFailed);
  });

  it('does not turn a final event older than the retention into callback work again (its row may be pruned)', async () => {
    const callbacks = await startCallbacks(svc.ctx);
    try {
      const event = (id: string, finishedAt: number) =>
        encodeEvent({
          type: 'DeliveryAttempted',
          data: {
            message_id: id, project: 'p', kind: 'http', run: 1, webhook_id: null, target: 'https://example.com/', method: 'POST',
            callback_function: 'public.on_done', message_created_at: finishedAt * 1000, attempt: 1, outcome: 'delivered', status: 'delivered',
            final: true, http_status: 200, smtp_code: null, error: null, response_body: null, retry_after_ms: null, next_attempt_at: null,
            started_at: finishedAt - 5, finished_at: finishedAt, duration_ms: 5,
          },
        });
      const old = randomUUID();
      const fresh = randomUUID();
      // one partition, old first: once the fresh one is seen, the old one has been read
      await svc.ctx.producer.send({ topic: svc.ctx.topics.events, messages: [{ ...event(old, Date.now() - 9 * DAY), partition: 0 }, { ...event(fresh, Date.now()), partition: 0 }] });
      await eventually(async () => (await svc.ctx.db.query('select 1 from delivery_callbacks where message_id = $1', [fresh])).rowCount, 30_000, 'the fresh callback row');
      expect((await svc.ctx.db.query('select 1 from delivery_callbacks where message_id = $1', [old])).rowCount).toBe(0);
    } finally {
      await callbacks.stop();
    }
  });

  it('leaves the work to the process holding the lock', async () => {
    const old = await ledgerRow(30);
    const other = await svc.ctx.db.connect();
    try {
      await other.query('select pg_advisory_lock($1)', [0x6c656467]);
      expect(await housekeep(svc.ctx, 8 * DAY)).toEqual({ ran: false, ledger: 0, releases: 0, callbacks: 0 });
      expect((await svc.ctx.db.query('select 1 from delivery_ledger where message_id = $1', [old])).rowCount).toBe(1);
    } finally {
      await other.query('select pg_advisory_unlock($1)', [0x6c656467]);
      other.release();
    }
    expect((await housekeep(svc.ctx, 8 * DAY)).ledger).toBe(1);
  });
});
