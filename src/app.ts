// Builds the application context from configuration: resolves the stack (external, or the local
// one provisioned on first use), migrates the control database, connects Kafka and creates topics.
import type { Config } from './config.js';
import type { AppContext } from './context.js';
import { createPool } from './db/pool.js';
import { migrate } from './db/migrate.js';
import { ProjectDatabases } from './db/project-dbs.js';
import { Partitioners } from 'kafkajs';
import { createKafka, ensureTopics } from './kafka/client.js';
import { topicNames } from './kafka/topics.js';
import { SecretBox } from './lib/secret-box.js';
import type { Logger } from './lib/logger.js';
import { ConnectClient } from './outbox/connector.js';
import { stackUp } from './stack/local-stack.js';

export interface Endpoints {
  databaseUrl: string;
  adminDatabaseUrl: string;
  kafkaBrokers: string[];
  connectUrl: string;
}

export async function resolveEndpoints(cfg: Config, log: Logger): Promise<Endpoints> {
  if (cfg.external) {
    const admin = new URL(cfg.DATABASE_URL!);
    admin.pathname = '/postgres';
    return { databaseUrl: cfg.DATABASE_URL!, adminDatabaseUrl: admin.toString(), kafkaBrokers: cfg.KAFKA_BROKERS!, connectUrl: cfg.KAFKA_CONNECT_URL! };
  }
  return stackUp(cfg, (line) => log.info(`stack: ${line}`));
}

export async function createContext(cfg: Config, log: Logger, endpoints: Endpoints): Promise<AppContext> {
  const db = createPool(endpoints.databaseUrl, 20, 'integrations-control');
  const applied = await migrate(db, undefined, (m) => log.info(m));
  if (applied) log.info({ applied }, 'control database migrated');
  const box = new SecretBox(cfg.masterKey, cfg.previousMasterKeys);
  const kafka = createKafka(endpoints.kafkaBrokers, cfg.KAFKA_CLIENT_ID, log);
  const topics = topicNames(cfg.TOPIC_PREFIX, cfg.retryDelaysMs);
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopics(admin, topics, cfg.OUTBOX_PARTITIONS);
  } finally {
    await admin.disconnect();
  }
  // The Java client's partitioner (murmur2), named so kafkajs does not warn about its default at every start
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  return {
    cfg,
    log,
    db,
    adminDatabaseUrl: endpoints.adminDatabaseUrl,
    box,
    kafka,
    producer,
    topics,
    connect: new ConnectClient(endpoints.connectUrl),
    projectDbs: new ProjectDatabases(db, box),
  };
}

export async function closeContext(ctx: AppContext): Promise<void> {
  await ctx.producer.disconnect().catch(() => {});
  await ctx.projectDbs.closeAll();
  await ctx.db.end().catch(() => {});
}
