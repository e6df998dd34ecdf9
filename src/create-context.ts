// Builds the application context from configuration: resolves the stack (external, or the local
// one provisioned on first use), migrates the control database, connects Kafka and creates topics.
import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { createPool, isDatabaseUnavailable, migrate, ProjectDatabases } from './db/index.js';
import { createKafka, ensureTopics, groupNames, topicNames, ConnectClient, JavaCompatiblePartitioner } from './kafka/index.js';
import { SecretBox } from './lib/secret-box.js';
import type { Logger } from './lib/logger.js';
import { stackUp } from './stack/index.js';

/** Where the infrastructure is: the control database, Kafka and Kafka Connect. */
export interface Infrastructure {
  databaseUrl: string;
  adminDatabaseUrl: string;
  kafkaBrokers: string[];
  connectUrl: string;
}

export async function resolveInfrastructure(cfg: Config, log: Logger): Promise<Infrastructure> {
  if (cfg.external) {
    const admin = new URL(cfg.DATABASE_URL!);
    admin.pathname = '/postgres';
    return { databaseUrl: cfg.DATABASE_URL!, adminDatabaseUrl: admin.toString(), kafkaBrokers: cfg.KAFKA_BROKERS!, connectUrl: cfg.KAFKA_CONNECT_URL! };
  }
  return stackUp(cfg, (line) => log.info(`stack: ${line}`));
}

export async function createContext(cfg: Config, log: Logger, infra: Infrastructure): Promise<AppContext> {
  const db = createPool(infra.databaseUrl, 20, 'integrations-control');
  // A process started while the database or the broker is away (a restart of everything at once,
  // a failover) waits for them instead of exiting: runs itself without a supervisor's restart loop.
  const applied = await untilAvailable(cfg, log, 'the control database', isDatabaseUnavailable, () => migrate(db, undefined, (m) => log.info(m)));
  if (applied) log.info({ applied }, 'control database migrated');
  const box = new SecretBox(cfg.masterKey, cfg.previousMasterKeys);
  const kafka = createKafka(infra.kafkaBrokers, cfg.KAFKA_CLIENT_ID, log);
  const topics = topicNames(cfg.TOPIC_PREFIX, cfg.retryDelaysMs);
  await untilAvailable(cfg, log, 'Kafka', isKafkaUnavailable, async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await ensureTopics(admin, topics, cfg.OUTBOX_PARTITIONS);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  });
  // The Java client's partitioner (murmur2; kafka/partitioner.ts), named so kafkajs does not warn about its default at every start.
  // Not idempotent: kafkajs's idempotent producer takes a partition's sequence number back when a
  // request fails, even one the broker wrote before the connection dropped, and the next batch to
  // that partition, another caller's, then reuses it: the broker takes it for a duplicate, answers
  // success and drops it. The crash test lost a retry record that way (acknowledged, never on the
  // topic, the message stuck `failed`) across a broker SIGKILL. Every record this producer writes
  // (retry and dead records, released and replayed messages) is checked against the ledger when it
  // is consumed, so a duplicate from a plain retry is harmless; one in flight at a time per broker
  // keeps a partition's records in order through those retries.
  const producer = kafka.producer({ idempotent: false, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: JavaCompatiblePartitioner });
  await producer.connect();
  return {
    cfg,
    log,
    db,
    adminDatabaseUrl: infra.adminDatabaseUrl,
    box,
    kafka,
    producer,
    topics,
    groups: groupNames(cfg.TOPIC_PREFIX),
    connect: new ConnectClient(infra.connectUrl),
    projectDbs: new ProjectDatabases(db, box),
  };
}

/** Kafka could not be reached (connection refused, retries spent on connecting, no leader yet). */
function isKafkaUnavailable(err: unknown): boolean {
  const e = err as { name?: string; message?: string; cause?: unknown; retriable?: boolean };
  return (
    e?.name === 'KafkaJSConnectionError' ||
    e?.name === 'KafkaJSNumberOfRetriesExceeded' ||
    e?.name === 'KafkaJSBrokerNotFound' ||
    e?.retriable === true ||
    /ECONNREFUSED|Connection error|topics not ready/.test(String(e?.message)) ||
    (e?.cause !== undefined && isKafkaUnavailable(e.cause))
  );
}

/**
 * Runs `fn` until it succeeds, while its failures say `what` is unavailable, for up to
 * STARTUP_WAIT: waits 1 s, 2 s, 4 s … (at most 10 s) between tries, one warning per try.
 */
async function untilAvailable<T>(cfg: Config, log: Logger, what: string, unavailable: (e: unknown) => boolean, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + cfg.STARTUP_WAIT;
  for (let attempt = 1; ; attempt++) {
    try {
      const out = await fn();
      if (attempt > 1) log.info(`${what} is available; starting`);
      return out;
    } catch (err) {
      if (!unavailable(err) || Date.now() >= deadline) throw err;
      const wait = Math.min(10_000, 1000 * 2 ** (attempt - 1));
      log.warn({ err: (err as Error).message, attempt }, `waiting for ${what} (unavailable); trying again in ${wait / 1000}s, for up to ${Math.round((deadline - Date.now()) / 1000)}s more (STARTUP_WAIT)`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

export async function closeContext(ctx: AppContext): Promise<void> {
  await ctx.producer.disconnect().catch(() => {});
  await ctx.projectDbs.closeAll();
  await ctx.db.end().catch(() => {});
}
