// What every role needs, built once in main.ts and passed down. Modules take what they use from
// it as arguments; nothing reaches for globals, so a test can build exactly the part it needs.
import type { Kafka, Producer } from 'kafkajs';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Pool, ProjectDatabases } from './db/index.js';
import type { Groups, Topics, ConnectClient } from './kafka/index.js';
import type { SecretBox } from './lib/secret-box.js';

export interface AppContext {
  cfg: Readonly<Config>;
  log: Logger;
  /** the control database */
  db: Pool;
  /** server-level connection used to create and drop project databases on the local cluster */
  adminDatabaseUrl: string;
  box: SecretBox;
  kafka: Kafka;
  /** shared producer for events, retries and dead letters (not idempotent: create-context.ts says why) */
  producer: Producer;
  topics: Topics;
  /** consumer-group names (kafka/topics.ts) */
  groups: Groups;
  connect: ConnectClient;
  projectDbs: ProjectDatabases;
}
