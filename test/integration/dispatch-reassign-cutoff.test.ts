// An ordered attempt that waits for a dispatcher slot is cut off once its partition is assigned to
// another dispatcher (dispatch-consumer.ts, launch: `leases.owns`). It goes on under its
// partition's lease across a restart of its own consumer, but the lease is also what keeps the
// partition's new owner off the key: had it gone on waiting for a slot held by this process's other
// work, the new owner would wait for the lease as long, and two dispatchers each full of the other's
// partitions waited for each other for good (found by the crash test after a broker kill, with no
// test of its own until now).
//
// Real Kafka, a real consumer group of two dispatchers and the control database's leases and
// ledger. Stood in for, to make the sequence deterministic: the attempt pipeline (x "waits for its
// window": it gives its slot back and takes one again when the test lets it; b keeps the one slot
// until the test lets it go) and the group's partition assigner (partition 1 goes to the second
// dispatcher once it joins, partition 0 stays with the first).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { AssignerProtocol, Kafka, logLevel, type PartitionAssigner } from 'kafkajs';
import type { AppContext } from '../../src/context.js';
import { startDispatchConsumer } from '../../src/delivery/consume/dispatch-consumer.js';
import type { AttemptPipeline, ProcessResult } from '../../src/delivery/attempt/pipeline.js';
import type { OutboxMessage } from '../../src/delivery/message.js';
import type { Worker } from '../../src/delivery/worker.js';
import { eventually, stack } from '../helpers/env.js';
import { outboxRecord } from '../helpers/outbox-records.js';
import { standInPipeline, startDispatchTopic, type DispatchTopic } from '../helpers/dispatch-topic.js';

describe('an ordered attempt waiting for a slot when its partition goes to another dispatcher', () => {
  let t: DispatchTopic;
  const workers: Worker[] = [];
  // kafkajs member ids start with the client id: the assigner tells the two dispatchers by it
  const clients = `reassign-cutoff-${randomUUID().slice(0, 8)}`;
  const firstId = `${clients}-first`;
  const secondId = `${clients}-second`;

  /** Partition 1 to the second dispatcher once it is a member; everything else to the first. */
  const assigner: PartitionAssigner = () => ({
    name: 'ReassignTestAssigner',
    version: 0,
    async assign({ members, topics }) {
      const second = members.find((m) => m.memberId.startsWith(secondId));
      return members.map((m) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 0,
          assignment: Object.fromEntries(topics.map((t) => [t, !second ? [0, 1] : m === second ? [1] : [0]])),
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return { name: 'ReassignTestAssigner', metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }) };
    },
  });

  /** A Kafka client whose consumers use the assigner above. */
  function client(clientId: string): Kafka {
    const kafka = new Kafka({ brokers: stack().kafkaBrokers, clientId, logLevel: logLevel.ERROR });
    return new Proxy(kafka, {
      get(target, prop) {
        if (prop === 'consumer') return (o: Parameters<Kafka['consumer']>[0]) => target.consumer({ ...o, partitionAssigners: [assigner] });
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  }

  beforeAll(async () => {
    t = await startDispatchTopic('reassign_cutoff', 2);
  });

  afterAll(async () => {
    for (const w of workers) await w.stop();
    await t?.stop();
  });

  const record = (id: string, partition: number, ordering?: { key: string; seq: number }) => outboxRecord(id, { project: 'reassigncutoff', partition, ordering });

  it('is cut off, and the partition’s new owner sends it while the first dispatcher’s slot stays taken', async () => {
    const { svc, admin, producer, topic, groupId } = t;
    const x = randomUUID();
    const b = randomUUID();
    const key = `key:${randomUUID()}`;
    // the first dispatcher: x gives its slot back, as while it waits for its endpoint's window, and
    // takes one again when let go; b keeps the one slot there is until let go
    const firstP = standInPipeline(x, b);
    const { cutOff, sent: firstSent } = firstP;
    const secondSent: string[] = [];
    const second = {
      async process(msg: OutboxMessage): Promise<ProcessResult> {
        secondSent.push(msg.id);
        return 'recorded';
      },
    } as unknown as AttemptPipeline;
    const start = async (clientId: string, name: string, pipeline: AttemptPipeline) => {
      const w = await startDispatchConsumer({
        ctx: { ...svc.ctx, kafka: client(clientId) } as AppContext,
        name,
        groupId,
        topics: [topic],
        pipeline,
        concurrency: 1,
        commitIntervalMs: 200,
      });
      workers.push(w);
    };

    await start(firstId, 'reassign-first', firstP.pipeline);
    await producer.send({ topic, messages: [record(x, 1, { key, seq: 1 })] });
    await firstP.waiting.opened;
    // the first dispatcher holds partition 1's lease for x, which is in flight
    await eventually(async () => (await svc.ctx.db.query(`select 1 from dispatch_leases where group_id = $1 and partition = 1`, [groupId])).rowCount === 1, 30_000, 'the lease of partition 1 to be taken');
    await producer.send({ topic, messages: [record(b, 0)] });
    await firstP.holding.opened;
    // x wants its slot back: b has it
    firstP.mayGo.open();

    // the second dispatcher joins; partition 1 goes to it
    await start(secondId, 'reassign-second', second);
    await eventually(async () => secondSent.includes(x), 60_000, 'x to be sent by the second dispatcher while b keeps the first one’s slot');
    expect(cutOff).toEqual([x]);
    expect(firstSent).not.toContain(x);
    expect(secondSent).toEqual([x]);

    firstP.release.open();
    await eventually(async () => firstSent.includes(b), 30_000, 'b to finish');
    const committed = async () => Object.fromEntries((await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions.map((p) => [p.partition, Number(p.offset)]));
    await eventually(async () => {
      const c = await committed();
      return c[0] === 1 && c[1] === 1;
    }, 30_000, 'both partitions committed past their record');
    expect(secondSent).toEqual([x]);
  }, 180_000);
});
