// A read-only consumer on the service's outbox topic (its own group, so the dispatcher's offsets
// are untouched). It notes when each row's message became readable on Kafka, which splits the
// commit → receipt latency into "capture" (Postgres WAL → Debezium → Connect's producer → broker)
// and "dispatch" (kafkajs fetch → attempt → HTTP → receiver). Its fetch settings are kafkajs's
// defaults with a short max wait, like the dispatcher's; it costs the benchmark process some CPU.
// It commits no offsets: a fresh group each run that starts at the end of the log needs none, and
// kafkajs's autoCommit sent an OffsetCommit after every batch, ~390 a second at 500 messages a
// second, which the broker's CPU (and the latency phase's busy machine) paid for: 6–7 points of
// `latency_machine_busy` on a machine at 69 % of J's pace (2026-11-27, broker request counts by JMX).
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { now } from './load.js';

export class OutboxTap {
  /** seq → time this consumer received it */
  readonly seenAt = new Map<number, number>();
  private consumer: Consumer | null = null;

  async start(brokers: string[], topic: string, groupId: string): Promise<void> {
    const consumer = new Kafka({ brokers, clientId: 'bench-tap', logLevel: logLevel.NOTHING }).consumer({ groupId, maxWaitTimeInMs: 100 });
    this.consumer = consumer;
    const joined = new Promise<void>((r) => consumer.on(consumer.events.GROUP_JOIN, () => r()));
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: false });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: 16,
      eachBatch: async ({ batch }) => {
        const t = now();
        for (const m of batch.messages) {
          try {
            const seq = Number(JSON.parse(m.value!.toString('utf8'))?.payload?.record?.seq);
            if (!Number.isFinite(seq) || this.seenAt.has(seq)) continue;
            this.seenAt.set(seq, t);
          } catch {
            // not a webhook row of ours
          }
        }
      },
    });
    await joined;
    // a fresh group starts at the end of the log: let the first fetch position itself
    await new Promise((r) => setTimeout(r, 1500));
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect().catch(() => {});
    this.consumer = null;
  }
}
