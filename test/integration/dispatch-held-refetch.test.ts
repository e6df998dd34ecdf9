// A record held for its endpoint (endpoints/gate.ts: circuit open, rate limit, window full) counts
// as finished for its partition's commit point, and the releaser puts it back later. A dispatcher
// killed after the hold and before its next offset commit leaves the record to the partition's next
// owner, which read it again and sent it while the releaser also put it back: two requests and two
// final outcomes for one run (the crash test: 8 of 10,240 after the kill of a dispatcher whose
// endpoint window had overflowed into holds). The hold is the message's live copy: a record read
// again while its hold exists, or after the releaser has put it back (held_releases), is finished
// without an attempt; the copy the releaser puts back is attempted.
//
// Real Kafka, a real consumer group, the control database's held_messages and ledger; the attempt
// pipeline is stood in for (it notes what it was asked to attempt).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Admin, Kafka, Producer } from 'kafkajs';
import type { AppContext } from '../../src/context.js';
import { startDispatchConsumer } from '../../src/delivery/consume/dispatch-consumer.js';
import type { AttemptPipeline, ProcessResult } from '../../src/delivery/attempt/pipeline.js';
import type { OutboxMessage } from '../../src/delivery/message.js';
import type { Worker } from '../../src/delivery/worker.js';
import { createTopicReady, eventually, uniqueName } from '../helpers/env.js';
import { startDispatchTopic, type DispatchTopic } from '../helpers/dispatch-topic.js';
import { outboxRecord } from '../helpers/outbox-records.js';
import type { TestService } from '../helpers/service.js';

describe('a record read again while its hold waits for the releaser', () => {
  let t: DispatchTopic;
  let svc: TestService;
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;
  let topic: string;
  let groupId: string;
  let dispatcher: Worker | undefined;

  beforeAll(async () => {
    t = await startDispatchTopic('held_refetch', 1);
    ({ svc, kafka, admin, producer, topic, groupId } = t);
  });

  afterAll(async () => {
    await dispatcher?.stop();
    await t?.stop();
  });

  const record = (project: string, id: string, released?: string, ordering?: { key: string; seq: number }) => outboxRecord(id, { project, released, ordering });
  const hold = (project: string, id: string) =>
    svc.ctx.db.query(
      `insert into held_messages (project_ref, endpoint, message_id, run, attempt, reason, headers, value)
       values ($1, 'webhook:test', $2, 1, 1, 'concurrency', '{}'::jsonb, '\\x7b7d'::bytea)`,
      [project, id],
    );
  /** A pipeline that notes what it was asked to attempt, as project:id:released. */
  const notingPipeline = (calls: string[]) =>
    ({
      async process(msg: OutboxMessage): Promise<ProcessResult> {
        calls.push(`${msg.project}:${msg.id}:${msg.released ?? 'fresh'}`);
        return 'recorded';
      },
    }) as unknown as AttemptPipeline;
  const committedOf = async (group: string, t: string) => Number((await admin.fetchOffsets({ groupId: group, topics: [t] }))[0].partitions[0].offset);

  it('finishes it without an attempt, attempts the copy put back, and keeps holds and releases to their project', async () => {
    const p = await svc.project();
    const other = await svc.project();
    const held = randomUUID();
    const plain = randomUUID();
    // another project's message with the same id as a held one: another message, attempted
    const twin = randomUUID();
    await hold(p.ref, held);
    await hold(other.ref, twin);
    // a hold the releaser has already put back (held_releases, written with the hold's delete): its
    // record read again is done with too, or it would be sent beside the released copy
    const released = randomUUID();
    await svc.ctx.db.query(`insert into held_releases (project_ref, message_id, run, attempt) values ($1, $2, 1, 1)`, [p.ref, released]);
    // a release in another project of a message with the same id: another message's, attempted here
    const releasedTwin = randomUUID();
    await svc.ctx.db.query(`insert into held_releases (project_ref, message_id, run, attempt) values ($1, $2, 1, 1)`, [other.ref, releasedTwin]);

    const calls: string[] = [];
    dispatcher = await startDispatchConsumer({
      ctx: { ...svc.ctx, kafka } as AppContext,
      name: 'held-refetch',
      groupId,
      topics: [topic],
      pipeline: notingPipeline(calls),
      concurrency: 4,
      commitIntervalMs: 200,
    });

    await producer.send({
      topic,
      messages: [
        record(p.ref, held), // read again after the kill of the dispatcher that held it
        record(p.ref, plain),
        record(p.ref, twin), // held in the other project only
        record(p.ref, held, 'paced'), // what the releaser puts back
        record(p.ref, released), // read again after its hold was put back
        record(p.ref, released, 'paced'), // the copy put back
        record(p.ref, releasedTwin), // released in the other project only
      ],
    });

    await eventually(async () => (await committedOf(groupId, topic)) === 7, 60_000, 'the commit point to pass all seven records');
    expect(calls.sort()).toEqual(
      [`${p.ref}:${held}:paced`, `${p.ref}:${plain}:fresh`, `${p.ref}:${twin}:fresh`, `${p.ref}:${released}:paced`, `${p.ref}:${releasedTwin}:fresh`].sort(),
    );
  }, 120_000);

  // An ordered record whose partition's lease another process held when it was fetched reads the
  // ledger again once the lease is taken over (the previous holder may have recorded it meanwhile).
  // Finding its hold there, it is done with, and not as an attempt made: the attempt key of a made
  // attempt stands for every copy of it (`recent`), and the copy the releaser puts back, with the
  // same key, would then be skipped: the message lost.
  it('finishes an ordered record whose hold appears while it waits for its lease, and attempts the copy put back', async () => {
    const p = await svc.project();
    const x = randomUUID();
    const ordering = { key: `key:${x}`, seq: 1 };
    const t = uniqueName('held_recheck').replace(/_/g, '-');
    const group = `${t}-group`;
    await createTopicReady(admin, t, 1);
    // another process holds the partition's lease for a few seconds: the record waits for it
    await svc.ctx.db.query(
      `insert into dispatch_leases (group_id, topic, partition, owner, until) values ($1, $2, 0, 'another-process', now() + interval '5 seconds')`,
      [group, t],
    );
    // the fetch's ledger check, observed: the hold is written only after it has read nothing
    let firstCheck!: () => void;
    const checked = new Promise<void>((r) => (firstCheck = r));
    const db = new Proxy(svc.ctx.db, {
      get(target, prop) {
        if (prop === 'query')
          return async (...args: Parameters<typeof target.query>) => {
            const r = await (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
            if ((args[0] as { name?: string })?.name === 'ledger-check') firstCheck();
            return r;
          };
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const calls: string[] = [];
    const d = await startDispatchConsumer({
      ctx: { ...svc.ctx, kafka, db } as AppContext,
      name: 'held-recheck',
      groupId: group,
      topics: [t],
      pipeline: notingPipeline(calls),
      concurrency: 4,
      commitIntervalMs: 200,
    });
    try {
      await producer.send({ topic: t, messages: [record(p.ref, x, undefined, ordering)] });
      await checked;
      // held meanwhile, by the process that had the lease
      await hold(p.ref, x);
      await eventually(async () => (await committedOf(group, t)) === 1, 60_000, 'the record to be finished once the lease is taken over');
      expect(calls).toEqual([]);
      // the releaser puts the hold back
      await producer.send({ topic: t, messages: [record(p.ref, x, 'paced', ordering)] });
      await eventually(async () => (await committedOf(group, t)) === 2, 60_000, 'the released copy to be finished');
      expect(calls).toEqual([`${p.ref}:${x}:paced`]);
    } finally {
      await d.stop();
      await admin.deleteTopics({ topics: [t] }).catch(() => {});
    }
  }, 120_000);
});
