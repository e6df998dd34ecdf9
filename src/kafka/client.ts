import { createRequire } from 'node:module';
import { Kafka, logLevel, type Admin, type LogEntry } from 'kafkajs';
import type { Logger } from 'pino';
import type { Topics } from './topics.js';

/**
 * Messages of the protocol errors kafkajs itself retries (coordinator loading or moving, leader
 * elections, ...). kafkajs logs each failed response at error level *before* retrying, so a healthy
 * start, while the group coordinator loads __consumer_offsets, printed errors nobody should act on.
 * They go to debug; a retry that finally fails still surfaces as the consumer's or producer's own error.
 */
export const RETRIABLE_PROTOCOL_ERRORS: ReadonlySet<string> = (() => {
  try {
    const { errorCodes } = createRequire(import.meta.url)('kafkajs/src/protocol/error.js') as { errorCodes: { message: string; retriable: boolean }[] };
    return new Set(errorCodes.filter((e) => e.retriable).map((e) => e.message));
  } catch {
    return new Set<string>(); // a kafkajs that moved the file: such lines stay at error level
  }
})();

/** The level a kafkajs log line is written at: lines that only describe kafkajs's own retries are debug. */
export function kafkaLogLevel(level: number, entry: { message: string; error?: unknown }): 'error' | 'warn' | 'info' | 'debug' {
  if (entry.message.startsWith('Response ') && typeof entry.error === 'string' && RETRIABLE_PROTOCOL_ERRORS.has(entry.error)) return 'debug';
  return levels[level] ?? 'info';
}

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
        log[kafkaLogLevel(level, entry)](rest, message);
      },
    retry: { initialRetryTime: 200, retries: 10 },
  });
}

/**
 * Creates the outbox, retry, dead and events topics when missing (idempotent), then waits until
 * every partition has a leader. kafkajs's own waitForLeaders retries only on "leader not
 * available", not on the "does not host this topic-partition" a fresh topic can answer with while
 * its metadata spreads, so the wait is done here; a concurrent creator is not an error either.
 */
export async function ensureTopics(admin: Admin, topics: Topics, partitions: number): Promise<void> {
  const wanted = [topics.outbox, ...topics.retry.map((r) => r.topic), topics.dead, topics.events];
  const existing = new Set(await admin.listTopics());
  const missing = wanted.filter((t) => !existing.has(t));
  if (missing.length > 0) {
    await admin
      .createTopics({
        waitForLeaders: false,
        topics: missing.map((topic) => ({
          topic,
          numPartitions: partitions,
          replicationFactor: -1,
          configEntries: [
            // the events and dead topics are what the projection and replays are rebuilt from: keep them
            { name: 'retention.ms', value: topic === topics.events || topic === topics.dead ? '-1' : String(7 * 86_400_000) },
            // daily segments: retention deletes whole segments, so with the default 7-day segments a
            // record of the outbox and retry topics could stay readable ~14 days, past LEDGER_RETENTION
            ...(topic === topics.events || topic === topics.dead ? [] : [{ name: 'segment.ms', value: String(86_400_000) }]),
            { name: 'max.message.bytes', value: '8388608' },
          ],
        })),
      })
      .catch((e: { type?: string }) => {
        if (e.type !== 'TOPIC_ALREADY_EXISTS') throw e;
      });
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const meta = await admin.fetchTopicMetadata({ topics: wanted });
      if (meta.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    if (Date.now() > deadline) throw new Error(`topics not ready after 30s: ${wanted.join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
