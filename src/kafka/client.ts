import { Kafka, logLevel, type Admin, type LogEntry } from 'kafkajs';
import type { Logger } from 'pino';
import type { Topics } from './topics.js';

const levels: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

export function createKafka(brokers: string[], clientId: string, logger: Logger): Kafka {
  const log = logger.child({ component: 'kafkajs' });
  return new Kafka({
    brokers,
    clientId,
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        log[levels[level] ?? 'info'](rest, message);
      },
    retry: { initialRetryTime: 200, retries: 10 },
  });
}

/** Creates the outbox, retry, dead and events topics when missing (idempotent). */
export async function ensureTopics(admin: Admin, topics: Topics, partitions: number): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const wanted = [topics.outbox, ...topics.retry.map((r) => r.topic), topics.dead, topics.events];
  const missing = wanted.filter((t) => !existing.has(t));
  if (missing.length === 0) return;
  await admin.createTopics({
    waitForLeaders: true,
    topics: missing.map((topic) => ({
      topic,
      numPartitions: partitions,
      replicationFactor: -1,
      configEntries: [
        // the events topic is the source of truth of the deliveries projection: keep it
        { name: 'retention.ms', value: topic === topics.events || topic === topics.dead ? '-1' : String(7 * 86_400_000) },
        { name: 'max.message.bytes', value: '8388608' },
      ],
    })),
  });
}
