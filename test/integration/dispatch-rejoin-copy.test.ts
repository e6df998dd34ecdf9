// A record fetched again after kafkajs restarted its consumer, while its first copy still waits for
// its endpoint's window, attaches to that copy instead of sending twice. The first copy cannot take
// a dispatcher slot again once its consumer run has ended, so it ends unfinished, before its
// request. Before the fix the attached copy then never finished either: nothing was sent, and the
// partition's commit point stayed behind it until the next rejoin, which may never come (the CI
// crash stage's message 5114, stuck at attempt 3 for six minutes after the broker was killed).
//
// Real Kafka, a real consumer group and the control database's ledger. Two things are stood in for,
// to make the sequence deterministic: the attempt pipeline (a record "waits for its window": it gives
// its slot back and waits until the test lets it go, as endpoints/window.ts does) and the fetch's
// ledger check, which fails on demand as it does while the control database is away, until kafkajs
// gives up retrying the batch and restarts the consumer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { AppContext } from '../../src/context.js';
import { startDispatchConsumer } from '../../src/delivery/consume/dispatch-consumer.js';
import type { AttemptPipeline, ProcessResult } from '../../src/delivery/attempt/pipeline.js';
import type { DispatchSlot } from '../../src/delivery/endpoints/window.js';
import { DispatcherStoppingError } from '../../src/delivery/endpoints/window.js';
import { alreadyRecorded } from '../../src/delivery/ledger.js';
import type { OutboxMessage } from '../../src/delivery/message.js';
import type { Worker } from '../../src/delivery/worker.js';
import { createTopicReady, eventually, stack, uniqueName } from '../helpers/env.js';
import { gate, outboxRecord } from '../helpers/outbox-records.js';
import { startTestService, type TestService } from '../helpers/service.js';

describe('a record fetched again after a consumer restart, while its first copy waits for its window', () => {
  let svc: TestService;
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;
  const dispatchers: Worker[] = [];
  const topic = uniqueName('rejoin_copy').replace(/_/g, '-');
  const groupId = `${topic}-group`;
  const orderedTopic = `${topic}-ordered`;
  const orderedGroupId = `${orderedTopic}-group`;
  const fullTopic = `${topic}-full`;
  const fullGroupId = `${fullTopic}-group`;
  const unrecordedTopic = `${topic}-unrecorded`;
  const unrecordedGroupId = `${unrecordedTopic}-group`;
  // kafkajs's restarts of each test's consumer, by group
  const restartsOf = new Map<string, string[]>([
    [groupId, []],
    [orderedGroupId, []],
    [fullGroupId, []],
    [unrecordedGroupId, []],
  ]);

  beforeAll(async () => {
    svc = await startTestService({ roles: ['api'] });
    // few retries, so that a failing batch restarts the consumer in a second rather than minutes
    kafka = new Kafka({
      brokers: stack().kafkaBrokers,
      clientId: topic,
      logLevel: logLevel.ERROR,
      retry: { initialRetryTime: 100, retries: 1 },
      logCreator: () => (entry) => {
        if (/^Restarting the consumer/.test(entry.log.message)) restartsOf.get(entry.log.groupId)?.push(entry.log.message);
      },
    });
    admin = kafka.admin();
    await admin.connect();
    await createTopicReady(admin, topic, 1);
    await createTopicReady(admin, orderedTopic, 1);
    await createTopicReady(admin, fullTopic, 1);
    await createTopicReady(admin, unrecordedTopic, 1);
    producer = kafka.producer();
    await producer.connect();
  });

  afterAll(async () => {
    for (const d of dispatchers) await d.stop();
    await producer?.disconnect();
    await admin?.deleteTopics({ topics: [topic, orderedTopic, fullTopic, unrecordedTopic] }).catch(() => {});
    await admin?.disconnect();
    await svc?.stop();
  });

  const record = (id: string, ordering?: { key: string; seq: number }) => outboxRecord(id, { project: 'rejoincopy', ordering });


  /**
   * A dispatcher on its own topic and group, over a stand-in pipeline that notes each call
   * (`calls`) and each send (`sent`). The first call for `waits.id` waits for its endpoint's window
   * as endpoints/window.ts does: it gives its slot back, opens `waits.waiting`, and takes a slot
   * again once `waits.mayGo` opens (cut off if it cannot); with `waits.unrecorded` it then sends and
   * fails as when its outcome cannot be recorded. The first call for `holds.id` keeps its
   * slot until `holds.mayGo`. `restart(r)` sends r with the fetch's ledger check failing, as while
   * the control database is away, until kafkajs gives up on the batch and restarts the consumer.
   */
  async function stage(o: {
    name: string;
    topic: string;
    groupId: string;
    concurrency: number;
    waits: { id: string; waiting: ReturnType<typeof gate>; mayGo: ReturnType<typeof gate>; unrecorded?: boolean };
    holds?: { id: string; holding: ReturnType<typeof gate>; mayGo: ReturnType<typeof gate> };
    log?: AppContext['log'];
  }) {
    const calls: string[] = [];
    const sent: string[] = [];
    let ledgerAway = false;
    const pipeline = {
      async process(msg: OutboxMessage, _hint: unknown, slot?: DispatchSlot): Promise<ProcessResult> {
        calls.push(msg.id);
        const first = calls.filter((c) => c === msg.id).length === 1;
        if (first && msg.id === o.waits.id) {
          slot!.yield();
          o.waits.waiting.open();
          await o.waits.mayGo.opened;
          if (!(await slot!.retake())) throw new DispatcherStoppingError();
          if (o.waits.unrecorded) {
            sent.push(msg.id);
            throw new Error('recording the outcome failed');
          }
        }
        if (first && msg.id === o.holds?.id) {
          o.holds.holding.open();
          await o.holds.mayGo.opened;
        }
        sent.push(msg.id);
        return 'recorded';
      },
    } as unknown as AttemptPipeline;
    const ctx = { ...svc.ctx, kafka, ...(o.log ? { log: o.log } : {}) } as AppContext;
    const worker = await startDispatchConsumer({
      ctx,
      name: o.name,
      groupId: o.groupId,
      topics: [o.topic],
      pipeline,
      concurrency: o.concurrency,
      commitIntervalMs: 200,
      check: async (msgs) => {
        if (ledgerAway) throw new Error('the control database is away');
        return { recorded: await alreadyRecorded(ctx.db, msgs), heads: new Map() };
      },
    });
    dispatchers.push(worker);
    const restarted = restartsOf.get(o.groupId)!;
    return {
      ctx,
      calls,
      sent,
      committed: async () => Number((await admin.fetchOffsets({ groupId: o.groupId, topics: [o.topic] }))[0].partitions[0].offset),
      // (a restart of this group before this point, say on a coordinator error while joining, is not the one awaited)
      async restart(r: ReturnType<typeof record>) {
        const before = restarted.length;
        ledgerAway = true;
        await producer.send({ topic: o.topic, messages: [r] });
        await eventually(async () => restarted.length > before, 60_000, 'kafkajs to restart the consumer');
        ledgerAway = false;
      },
    };
  }

  it('makes the attempt once the copy it waited for is cut off, and commits past it', async () => {
    const x = randomUUID();
    const y = randomUUID();
    const waits = { id: x, waiting: gate(), mayGo: gate() };
    const d = await stage({ name: 'rejoin-copy', topic, groupId, concurrency: 4, waits });

    await producer.send({ topic, messages: [record(x)] });
    await waits.waiting.opened;
    // x holds the commit point (its outcome is not recorded): the committed offset stays before it
    expect(await d.committed()).toBeLessThanOrEqual(0);

    // the restarted consumer fetches from the committed offset: x again (attached to the copy that
    // waits), then y, which is sent
    await d.restart(record(y));
    await eventually(async () => d.sent.includes(y), 60_000, 'y to be sent after the restart');
    expect(d.sent).not.toContain(x);
    expect(d.calls.filter((c) => c === x)).toHaveLength(1);

    // Another project's message with x's id, already delivered: the copy reads the ledger again
    // before it sends, and that row must not pass for x's (the ledger is keyed by project).
    await d.ctx.db.query(`insert into delivery_ledger (project_ref, message_id, run, attempt, outcome, final) values ('otherproject', $1, 1, 1, 'delivered', true)`, [x]);
    // the waiting copy belongs to the ended run: it cannot take a slot again and ends unsent
    waits.mayGo.open();
    await eventually(async () => d.sent.includes(x), 30_000, 'x to be sent by the copy fetched after the restart');
    await eventually(async () => (await d.committed()) === 2, 30_000, 'the commit point to pass x and y');
    expect(d.sent.filter((s) => s === x)).toHaveLength(1);
    // sent by the copy's own attempt, not by the first copy going on
    expect(d.calls.filter((c) => c === x)).toHaveLength(2);
    expect(d.sent.filter((s) => s === y)).toHaveLength(1);
  }, 180_000);

  // An ordered record is different: its key's next message must not go before it, and a copy made
  // by a later run could not take its place in the key's lane. Its first copy goes on under its
  // partition's lease (which keeps any other process off the key meanwhile) instead of being cut
  // off by the end of its run. Before that change the first copy was cut off, the key's next
  // message went first, and the record itself waited unfinished for the next rejoin.
  it('lets an ordered first copy go on under its lease, with the next message of its key after it', async () => {
    const key = `key:${randomUUID()}`;
    const x = randomUUID();
    const y = randomUUID();
    const waits = { id: x, waiting: gate(), mayGo: gate() };
    const d = await stage({ name: 'rejoin-copy-ordered', topic: orderedTopic, groupId: orderedGroupId, concurrency: 4, waits });

    await producer.send({ topic: orderedTopic, messages: [record(x, { key, seq: 1 })] });
    await waits.waiting.opened;
    expect(await d.committed()).toBeLessThanOrEqual(0);

    await d.restart(record(y, { key, seq: 2 }));

    // The restarted consumer fetches x again (attached to the first copy) and y, which waits
    // behind x in the key's lane: nothing is sent while x waits for its window.
    await eventually(async () => (await d.ctx.db.query(`select 1 from dispatch_leases where group_id = $1`, [orderedGroupId])).rowCount === 1, 30_000, 'the lease to be taken');
    await new Promise((r) => setTimeout(r, 1500));
    expect(d.sent).toEqual([]);

    waits.mayGo.open();
    await eventually(async () => d.sent.length === 2, 30_000, 'x, then y, to be sent');
    expect(d.sent).toEqual([x, y]);
    // x by its first copy, once: the copy fetched after the restart waited for it
    expect(d.calls.filter((c) => c === x)).toHaveLength(1);
    await eventually(async () => (await d.committed()) === 2, 30_000, 'the commit point to pass x and y');
  }, 180_000);

  // An ordered first copy can still end unfinished: its outcome could not be recorded (or its lease
  // was lost). Its copy fetched after the restart cannot launch in its place, outside the fetch's
  // offset order, so the dispatcher reads the partition again from the record (dispatch-consumer.ts,
  // reread) rather than leave it, and its partition's commit point, for a rejoin that may never come.
  it("reads the partition again when an ordered first copy's outcome could not be recorded, with no further restart", async () => {
    const key = `key:${randomUUID()}`;
    const x = randomUUID();
    const y = randomUUID();
    const waits = { id: x, waiting: gate(), mayGo: gate(), unrecorded: true };
    const d = await stage({ name: 'rejoin-copy-unrecorded', topic: unrecordedTopic, groupId: unrecordedGroupId, concurrency: 4, waits });

    await producer.send({ topic: unrecordedTopic, messages: [record(x, { key, seq: 1 })] });
    await waits.waiting.opened;
    // run 2 fetches x again (attached to the first copy, which goes on under the lease) and y,
    // which waits behind x in the key's lane
    await d.restart(record(y, { key, seq: 2 }));
    await eventually(async () => (await d.ctx.db.query(`select 1 from dispatch_leases where group_id = $1`, [unrecordedGroupId])).rowCount === 1, 30_000, 'the lease to be taken');
    await new Promise((r) => setTimeout(r, 1500));
    expect(d.sent).toEqual([]);
    const restarts = restartsOf.get(unrecordedGroupId)!.length;

    // x's first copy sends, and its outcome is not recorded: it ends unfinished
    waits.mayGo.open();
    await eventually(async () => d.sent.filter((s) => s === x).length === 2 && d.sent.includes(y), 60_000, 'x to be sent again by a copy read after the failure, and y to be sent');
    // x's first send went before y's (the key's order); x's second is the at-least-once repeat of an
    // attempt whose outcome was lost, made by the copy the partition's reread fetched
    expect(d.sent.indexOf(x)).toBeLessThan(d.sent.indexOf(y));
    expect(d.sent.filter((s) => s === y)).toHaveLength(1);
    expect(d.calls.filter((c) => c === x)).toHaveLength(2);
    await eventually(async () => (await d.committed()) === 2, 30_000, 'the commit point to pass x and y');
    // no rejoin did it: without the reread x waits, and this times out (checked)
    expect(restartsOf.get(unrecordedGroupId)!.length).toBe(restarts);
  }, 180_000);

  // The copy's own attempt waits for a dispatcher slot like any other. If kafkajs restarts the
  // consumer again meanwhile, the record is no longer that copy's: the run after fetches it again,
  // and both would send it once a slot is free. The wait ends when the copy's run does.
  it("ends the copy's wait for a slot when its own run ends, so the next run's copy sends it alone", async () => {
    const x = randomUUID();
    const b = randomUUID();
    // records that only make a fetch fail (their outcome is recorded, so they take no slot)
    const y1 = randomUUID();
    const y2 = randomUUID();
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) }));
    const waits = { id: x, waiting: gate(), mayGo: gate() };
    // the one slot there is stays taken by b
    const holds = { id: b, holding: gate(), mayGo: gate() };
    const d = await stage({ name: 'rejoin-copy-full', topic: fullTopic, groupId: fullGroupId, concurrency: 1, waits, holds, log });
    for (const y of [y1, y2]) {
      await d.ctx.db.query(`insert into delivery_ledger (project_ref, message_id, run, attempt, outcome, final) values ('rejoincopy', $1, 1, 1, 'delivered', true)`, [y]);
    }

    await producer.send({ topic: fullTopic, messages: [record(x)] });
    await waits.waiting.opened;
    await producer.send({ topic: fullTopic, messages: [record(b)] });
    await holds.holding.opened;

    // run 2 fetches x and b again (both attach to their first copies); x's first copy is cut off,
    // and its copy makes the attempt: it waits for the slot b holds
    await d.restart(record(y1));
    // run 2 has been through x and b (attached) once it skips y1, which comes after them
    await eventually(async () => lines.some((l) => l.includes(y1) && l.includes('outcome already recorded')), 30_000, 'run 2 to fetch x, b and y1');
    waits.mayGo.open();
    await eventually(async () => lines.some((l) => l.includes(x) && l.includes('attempting it again here')), 30_000, "x's copy to begin its attempt");

    // run 3: the copy of run 2 no longer owns x; run 3 fetches x again and waits for the slot too
    await d.restart(record(y2));
    // the wait for a slot looks at its cancellation about every second
    await new Promise((r) => setTimeout(r, 2500));
    holds.mayGo.open();
    await eventually(async () => d.sent.includes(x) && d.sent.includes(b), 30_000, 'b, then x, to be sent');
    await eventually(async () => (await d.committed()) === 4, 30_000, 'the commit point to pass x, b, y1 and y2');
    expect(d.sent.filter((s) => s === x)).toHaveLength(1);
    // the first copy's cut-off call and run 3's: run 2's copy never got its slot
    expect(d.calls.filter((c) => c === x)).toHaveLength(2);
  }, 240_000);
});
