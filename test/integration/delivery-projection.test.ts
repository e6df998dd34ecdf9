// The projection's upsert (projection.ts) on the real control database: the same attempt made
// twice (a failed copy beside the final one, as a broker restart can cause), applied one event per
// transaction in every order, ends in one row that stays final and one history row per attempt,
// the same as a single fold of all the events (what a rebuild does).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryAttempted, DeliveryEvent } from '../../src/delivery/events.js';
import { applyEvents } from '../../src/delivery/projection/fold.js';
import { startTestService, type TestService } from '../helpers/service.js';

const queued = (id: string, run = 1, at = 1): DeliveryEvent => ({
  type: 'DeliveryQueued',
  version: 1,
  data: { message_id: id, project: 'pproj', kind: 'webhook', run, webhook_id: null, target: 'http://x/hook', method: 'POST', callback_function: null, message_created_at: 1_700_000_000_000_000, queued_at: at },
});

const attempted = (id: string, attempt: number, outcome: DeliveryAttempted['outcome'], finishedAt: number, run = 1): DeliveryEvent => {
  const q = queued(id, run).data as object;
  return {
    type: 'DeliveryAttempted',
    version: 1,
    data: {
      ...(q as Omit<DeliveryAttempted, 'attempt'>),
      attempt,
      outcome,
      status: outcome,
      final: outcome !== 'failed',
      http_status: outcome === 'delivered' ? 200 : 503,
      smtp_code: null,
      error: outcome === 'delivered' ? null : 'HTTP 503',
      response_body: null,
      retry_after_ms: null,
      next_attempt_at: outcome === 'failed' ? finishedAt + 1000 : null,
      started_at: finishedAt - 5,
      finished_at: finishedAt,
      duration_ms: 5,
    },
  };
};

function permutations<T>(xs: T[]): T[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
}

describe('deliveries projection: one attempt made twice', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ roles: ['api'] });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  async function state(id: string) {
    const row = (await svc.ctx.db.query(`select status, run, attempts, total_attempts, extract(epoch from delivered_at) * 1000 as delivered_at, last_http_status from deliveries where id = $1`, [id])).rows[0];
    const history = (await svc.ctx.db.query(`select run, attempt, outcome, http_status from delivery_attempts where delivery_id = $1 order by run, attempt`, [id])).rows;
    return { row: { ...row, delivered_at: row.delivered_at === null ? null : Math.round(Number(row.delivered_at)) }, history };
  }

  /** Applies `make(id)` one event per transaction in every order; each order must end where one fold of them all does. */
  async function everyOrder(make: (id: string) => DeliveryEvent[]) {
    const all = randomUUID();
    await applyEvents(svc.ctx.db, make(all));
    const want = await state(all);
    for (const order of permutations(make('').map((_, i) => i))) {
      const id = randomUUID();
      const events = make(id);
      for (const i of order) await applyEvents(svc.ctx.db, [events[i]]);
      expect({ order, ...(await state(id)) }).toEqual({ order, ...want });
    }
    return want;
  }

  it('a failed copy of a delivered attempt never overwrites it, and the history shows the delivered one', async () => {
    const s = await everyOrder((id) => [queued(id), attempted(id, 1, 'failed', 1000), attempted(id, 1, 'delivered', 1010)]);
    expect(s.row).toMatchObject({ status: 'delivered', run: 1, attempts: 1, total_attempts: 1, delivered_at: 1010, last_http_status: 200 });
    expect(s.history).toEqual([{ run: 1, attempt: 1, outcome: 'delivered', http_status: 200 }]);
  });

  it("the failed copy's later attempts do not reopen the run; a manual retry's new run does", async () => {
    const s = await everyOrder((id) => [attempted(id, 2, 'delivered', 2000), attempted(id, 2, 'failed', 2001), attempted(id, 3, 'failed', 3000), attempted(id, 4, 'dead', 4000)]);
    expect(s.row).toMatchObject({ status: 'delivered', attempts: 2, total_attempts: 3, delivered_at: 2000 });
    expect(s.history.map((h: { attempt: number; outcome: string }) => [h.attempt, h.outcome])).toEqual([
      [2, 'delivered'],
      [3, 'failed'],
      [4, 'dead'],
    ]);

    const r = await everyOrder((id) => [attempted(id, 8, 'dead', 8000), queued(id, 2, 9000), attempted(id, 1, 'failed', 9100, 2)]);
    expect(r.row).toMatchObject({ status: 'failed', run: 2, attempts: 1, total_attempts: 2 });
  });
});
