// Reads outbox messages back from the log (the dead topic, the retry topics) for a manual retry or
// a bulk replay: scans the given topics from the offsets at a timestamp up to their end as it was
// when the read started, keeping for each wanted message id its newest record of the given
// project. The topics hold every project's records, and a message id is chosen in a project's own
// database: another project's record with the same id is another message, never read back for
// this one (its project header is the one Connect added, not something the project writes). A
// throwaway consumer group is used and deleted afterwards; nothing is committed.
import type { AppContext } from '../../context.js';
import { decodeMessage, MalformedMessageError, type OutboxMessage } from '../message.js';

export interface ReadBackOptions {
  topics: string[];
  /** the project whose messages are wanted: records of any other project are skipped */
  project: string;
  /** message id → the newest run wanted (records of later runs are ignored) */
  wanted: Map<string, number>;
  /** epoch ms: records older than this are not read (offsets by timestamp) */
  since: number;
  progress?: (scanned: number, total: number) => void;
  /** give up when no record arrived for this long (a partition that cannot be read) */
  idleTimeoutMs?: number;
}

export async function readBack(ctx: Pick<AppContext, 'kafka' | 'cfg' | 'log'>, opts: ReadBackOptions): Promise<Map<string, OutboxMessage>> {
  const found = new Map<string, OutboxMessage>();
  if (opts.wanted.size === 0) return found;
  const admin = ctx.kafka.admin();
  await admin.connect();
  const groupId = `${ctx.cfg.TOPIC_PREFIX}.readback.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  try {
    // topic:partition → [start, end)
    const ranges = new Map<string, [number, number]>();
    for (const topic of opts.topics) {
      const ends = await admin.fetchTopicOffsets(topic);
      const starts = await admin.fetchTopicOffsetsByTimestamp(topic, Math.max(0, opts.since));
      for (const e of ends) {
        const s = starts.find((x) => x.partition === e.partition);
        const start = Math.max(Number(e.low), s && Number(s.offset) >= 0 ? Number(s.offset) : Number(e.high));
        if (start < Number(e.high)) ranges.set(`${topic}:${e.partition}`, [start, Number(e.high)]);
      }
    }
    const total = [...ranges.values()].reduce((n, [s, e]) => n + e - s, 0);
    if (total === 0) return found;
    const reached = new Map<string, number>();
    let scanned = 0;
    const done = () => [...ranges].every(([k, [, end]]) => (reached.get(k) ?? -1) >= end - 1);

    const consumer = ctx.kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 200 });
    await consumer.connect();
    try {
      for (const topic of new Set([...ranges.keys()].map((k) => k.slice(0, k.lastIndexOf(':'))))) await consumer.subscribe({ topic, fromBeginning: true });
      let finish!: () => void;
      const finished = new Promise<void>((r) => (finish = r));
      let lastProgress = Date.now();
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch, heartbeat }) => {
          const key = `${batch.topic}:${batch.partition}`;
          const range = ranges.get(key);
          if (!range) return;
          for (const m of batch.messages) {
            const offset = Number(m.offset);
            if (offset < range[0] || offset >= range[1]) continue;
            scanned++;
            reached.set(key, offset);
            // the id header: an ordered message is keyed by its ordering key, not its id
            const id = (Array.isArray(m.headers?.id) ? m.headers?.id[0] : m.headers?.id)?.toString() ?? m.key?.toString();
            const maxRun = id ? opts.wanted.get(id) : undefined;
            if (maxRun === undefined) continue;
            try {
              const msg = decodeMessage(m);
              if (msg.project !== opts.project || msg.id !== id) continue;
              const prev = found.get(msg.id);
              if (msg.run <= maxRun && (!prev || msg.run > prev.run || (msg.run === prev.run && msg.attempt >= prev.attempt))) found.set(msg.id, msg);
            } catch (err) {
              if (!(err instanceof MalformedMessageError)) throw err;
            }
          }
          lastProgress = Date.now();
          opts.progress?.(scanned, total);
          await heartbeat();
          if (done()) finish();
        },
      });
      for (const [key, [start]] of ranges) {
        const i = key.lastIndexOf(':');
        consumer.seek({ topic: key.slice(0, i), partition: Number(key.slice(i + 1)), offset: String(start) });
      }
      const idle = opts.idleTimeoutMs ?? 30_000;
      await Promise.race([
        finished,
        (async () => {
          while (!done() && Date.now() - lastProgress < idle) await new Promise((r) => setTimeout(r, 250));
          if (!done()) ctx.log.warn({ scanned, total }, 'reading back from the log stopped making progress; returning what was found');
        })(),
      ]);
    } finally {
      await consumer.disconnect();
      await admin.deleteGroups([groupId]).catch(() => {});
    }
    return found;
  } finally {
    await admin.disconnect();
  }
}
