// The fixture of the tests that drive a dispatch consumer directly over a topic of their own: a
// test service (its control database: leases, ledger, holds), an admin and a producer on a fresh
// topic, and a stand-in attempt pipeline for the two roles those tests give records: one that waits
// for its endpoint's window (gives its slot back, and takes one again when let go) and one that
// keeps the only slot until let go.
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import type { AttemptPipeline, ProcessResult } from '../../src/delivery/attempt/pipeline.js';
import { DispatcherStoppingError, type DispatchSlot } from '../../src/delivery/endpoints/window.js';
import type { OutboxMessage } from '../../src/delivery/message.js';
import { createTopicReady, stack, uniqueName } from './env.js';
import { gate } from './outbox-records.js';
import { startTestService, type TestService } from './service.js';

export interface DispatchTopic {
  svc: TestService;
  kafka: Kafka;
  admin: Admin;
  producer: Producer;
  topic: string;
  groupId: string;
  /** the group's committed offset of partition 0 */
  committed(): Promise<number>;
  /** deletes the topic and stops what it started (stop the dispatchers first) */
  stop(): Promise<void>;
}

export async function startDispatchTopic(name: string, partitions: number): Promise<DispatchTopic> {
  const svc = await startTestService({ roles: ['api'] });
  const topic = uniqueName(name).replace(/_/g, '-');
  const kafka = new Kafka({ brokers: stack().kafkaBrokers, clientId: topic, logLevel: logLevel.ERROR });
  const admin = kafka.admin();
  await admin.connect();
  await createTopicReady(admin, topic, partitions);
  const producer = kafka.producer();
  await producer.connect();
  return {
    svc,
    kafka,
    admin,
    producer,
    topic,
    groupId: `${topic}-group`,
    committed: async () => Number((await admin.fetchOffsets({ groupId: `${topic}-group`, topics: [topic] }))[0].partitions[0].offset),
    async stop() {
      await producer.disconnect();
      await admin.deleteTopics({ topics: [topic] }).catch(() => {});
      await admin.disconnect();
      await svc.stop();
    },
  };
}

/**
 * A stand-in pipeline. `waiter`: its first try gives its slot back (as while it waits for its
 * endpoint's window), opens `waiting`, and once `mayGo` is opened takes a slot again or, refused,
 * is cut off (DispatcherStoppingError, noted in `cutOff`). `holder`: opens `holding` and keeps its
 * slot until `release` is opened. Every record that gets through is noted in `sent`.
 */
export function standInPipeline(waiter: string, holder: string) {
  const g = { waiting: gate(), mayGo: gate(), holding: gate(), release: gate() };
  const sent: string[] = [];
  const cutOff: string[] = [];
  let waited = false;
  const pipeline = {
    async process(msg: OutboxMessage, _hint: unknown, slot?: DispatchSlot): Promise<ProcessResult> {
      if (msg.id === waiter && !waited) {
        waited = true;
        slot!.yield();
        g.waiting.open();
        await g.mayGo.opened;
        if (!(await slot!.retake())) {
          cutOff.push(msg.id);
          throw new DispatcherStoppingError();
        }
      }
      if (msg.id === holder) {
        g.holding.open();
        await g.release.opened;
      }
      sent.push(msg.id);
      return 'recorded';
    },
  } as unknown as AttemptPipeline;
  return { pipeline, sent, cutOff, ...g };
}
