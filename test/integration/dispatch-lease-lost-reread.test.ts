// An ordered attempt cut off because its partition's lease was lost while the partition stays
// assigned here (a stall, the control database away past the lease's TTL) is not left for a rejoin
// that may never come: the dispatcher reads the partition again from the record (dispatch-consumer.ts,
// reread), and sends it once the lease is its own again. Found by the crash test: two ordered
// retries cut off this way beside a broker restart waited for good, their partition's commit point
// held behind them.
//
// Real Kafka, one real dispatch consumer, the control database's leases and ledger. Stood in for, to
// make the sequence deterministic: the attempt pipeline (x "waits for its endpoint's window": it
// gives its slot back and wants it again while b holds the only one), and the lease's loss (the
// test writes another owner into x's partition's lease row, as a process that took it would).
import { describe, expect, it, onTestFinished } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { AppContext } from '../../src/context.js';
import { startDispatchConsumer } from '../../src/delivery/consume/dispatch-consumer.js';
import type { Worker } from '../../src/delivery/worker.js';
import type { AttemptPipeline, ProcessResult } from '../../src/delivery/attempt/pipeline.js';
import type { OutboxMessage } from '../../src/delivery/message.js';
import { eventually } from '../helpers/env.js';
import { outboxRecord } from '../helpers/outbox-records.js';
import { standInPipeline, startDispatchTopic } from '../helpers/dispatch-topic.js';

/** `kafka`, with every consumer it makes noting its group joins in `joins` */
function countingJoins(kafka: Kafka, joins: number[]): Kafka {
  return new Proxy(kafka, {
    get(target, prop) {
      if (prop === 'consumer')
        return (o: Parameters<Kafka['consumer']>[0]) => {
          const c = target.consumer(o);
          c.on(c.events.GROUP_JOIN, () => joins.push(Date.now()));
          return c;
        };
      const v = Reflect.get(target, prop);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** A topic of one partition for this test, and its dispatcher stopped and topic deleted after it. */
async function topicForTest(name: string) {
  const t = await startDispatchTopic(name, 1);
  const own: { worker?: Worker } = {};
  onTestFinished(async () => {
    await own.worker?.stop();
    await t.stop();
  });
  return { t, own };
}

describe('a record that ends unfinished while its partition stays here', () => {
  it('an ordered attempt cut off by a lost lease: reads the partition again and sends the record once the lease is back, with no rejoin', async () => {
    const { t, own } = await topicForTest('lease_lost_reread');
    const { svc, producer, topic, groupId } = t;
    const x = randomUUID();
    const b = randomUUID();
    const key = `key:${randomUUID()}`;
    // x waits for its window and wants a slot again while b holds the only one
    const p = standInPipeline(x, b);
    const joins: number[] = [];
    own.worker = await startDispatchConsumer({
      ctx: { ...svc.ctx, kafka: countingJoins(t.kafka, joins) } as AppContext,
      name: 'lease-lost-reread',
      groupId,
      topics: [topic],
      pipeline: p.pipeline,
      concurrency: 1,
      commitIntervalMs: 200,
    });

    await producer.send({ topic, messages: [outboxRecord(x, { project: 'leaselost', partition: 0, ordering: { key, seq: 1 } })] });
    await p.waiting.opened;
    const leaseRow = async () => (await svc.ctx.db.query(`select owner from dispatch_leases where group_id = $1 and partition = 0`, [groupId])).rows[0];
    await eventually(async () => (await leaseRow()) !== undefined, 30_000, "x's partition lease to be taken");
    await producer.send({ topic, messages: [outboxRecord(b, { project: 'leaselost', partition: 0 })] });
    await p.holding.opened;
    const joined = joins.length;

    // another process takes the lease for 6 s; x wants its slot back while b holds it, and is cut
    // off once the dispatcher's renewal (every 2 s) finds the lease gone
    await svc.ctx.db.query(`update dispatch_leases set owner = $2, until = now() + interval '6 seconds' where group_id = $1 and partition = 0`, [groupId, randomUUID()]);
    p.mayGo.open();
    await eventually(async () => p.cutOff.includes(x), 30_000, 'x to be cut off by the lost lease');
    p.release.open();

    // the partition was never taken from this dispatcher: x is sent here once the lease is free
    // again, after b, and the partition commits past both. Without the reread x waits for a
    // rejoin and this times out (checked).
    await eventually(async () => p.sent.includes(x), 60_000, 'x to be sent again by the same dispatcher');
    expect(p.sent).toEqual([b, x]);
    expect(p.cutOff).toEqual([x]);
    expect(joins.length).toBe(joined);
    await eventually(async () => (await t.committed()) === 2, 30_000, 'the partition committed past both records');
    expect(p.sent).toEqual([b, x]);
  }, 180_000);

  // The same mechanism for an outcome that could not be recorded (the recorder gives up after its
  // retries: Kafka or the control database away for minutes) while the consumer runs on: the record
  // was not finished, nothing else fetches it, and it held its partition's commit point until a
  // rejoin. It is read again and attempted again (the receiver may get it twice: at-least-once).
  // Stood in for: the attempt pipeline, which sends and then fails as the recorder's give-up does.
  it('an outcome that could not be recorded while its consumer runs on: is read again and attempted again, with no rejoin, and the partition commits past it', async () => {
    const { t, own } = await topicForTest('unrecorded_reread');
    const { svc, producer, topic, groupId } = t;
    const x = randomUUID();
    const b = randomUUID();
    const calls: string[] = [];
    const joins: number[] = [];
    // the consumer's joins when x's outcome was lost
    let joinedAtLoss = -1;
    const pipeline = {
      async process(msg: OutboxMessage): Promise<ProcessResult> {
        calls.push(msg.id);
        if (msg.id === x && calls.filter((c) => c === x).length === 1) {
          joinedAtLoss = joins.length;
          throw new Error('recording the outcome failed');
        }
        return 'recorded';
      },
    } as unknown as AttemptPipeline;
    own.worker = await startDispatchConsumer({
      ctx: { ...svc.ctx, kafka: countingJoins(t.kafka, joins) } as AppContext,
      name: 'unrecorded-reread',
      groupId,
      topics: [topic],
      pipeline,
      concurrency: 4,
      commitIntervalMs: 200,
    });

    await producer.send({ topic, messages: [outboxRecord(x, { project: 'unrecorded', partition: 0 })] });
    await eventually(async () => calls.filter((c) => c === x).length === 2, 60_000, 'x to be attempted again after its outcome was lost');
    await producer.send({ topic, messages: [outboxRecord(b, { project: 'unrecorded', partition: 0 })] });
    await eventually(async () => (await t.committed()) === 2, 30_000, 'the partition committed past x and b');
    expect(calls.filter((c) => c === x)).toHaveLength(2);
    expect(calls.filter((c) => c === b)).toHaveLength(1);
    // no rejoin fetched x again: without the reread x waits for one, and this times out (checked)
    expect(joinedAtLoss).toBeGreaterThan(0);
    expect(joins.length).toBe(joinedAtLoss);
  }, 120_000);
});
