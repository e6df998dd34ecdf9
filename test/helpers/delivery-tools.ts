// Helpers for delivery tests that look under the hood: read a topic from the start, and run the
// service's own entry points (the dispatcher, the admin command) as child processes that share a
// test service's control database, topics and delivery policy.
import { spawn, type ChildProcess } from 'node:child_process';
import type { KafkaMessage } from 'kafkajs';
import { repoRoot } from '../../src/config.js';
import { startScript } from '../../src/stack/index.js';
import { eventually, stack } from './env.js';
import type { TestService } from './service.js';

/** Environment for a child process acting as part of `svc`. */
export function childEnv(svc: TestService, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const c = svc.cfg;
  return {
    ...process.env,
    APP_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: (svc.ctx.db as unknown as { options: { connectionString: string } }).options.connectionString,
    KAFKA_BROKERS: stack().kafkaBrokers.join(','),
    KAFKA_CONNECT_URL: stack().connectUrl,
    TOPIC_PREFIX: c.TOPIC_PREFIX,
    OUTBOX_PARTITIONS: String(c.OUTBOX_PARTITIONS),
    RETRY_DELAYS: c.RETRY_DELAYS,
    RETRY_TIME_SCALE: String(c.RETRY_TIME_SCALE),
    MAX_ATTEMPTS: String(c.MAX_ATTEMPTS),
    MAX_MESSAGE_AGE: String(c.MAX_MESSAGE_AGE),
    OUTBOUND_ALLOW_CIDRS: c.OUTBOUND_ALLOW_CIDRS.join(','),
    ...extra,
  };
}

/** npm start's node flags (the heap cap among them), for the service run through tsx from its source. */
export const serviceArgs = (): string[] => [...startScript().flags, '--import', 'tsx', 'src/main.ts'];

/**
 * The service as a separate process (e.g. ROLES=dispatcher), with npm start's node flags, so it runs
 * under production's heap cap and collector; its output goes to `log`.
 */
export function spawnService(env: NodeJS.ProcessEnv, log: (chunk: string) => void): ChildProcess {
  const p = spawn(process.execPath, serviceArgs(), { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  p.stdout!.on('data', (c) => log(String(c)));
  p.stderr!.on('data', (c) => log(String(c)));
  return p;
}

/** npm run admin -- <args>, parsed last line of output. */
export async function runAdmin(svc: TestService, args: string[]): Promise<any> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/admin/cli.ts', ...args], { cwd: repoRoot, env: childEnv(svc), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  const code = await new Promise((r) => child.on('exit', r));
  if (code !== 0) throw new Error(`admin ${args.join(' ')} exited ${code}: ${stderr}`);
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

type Admin = ReturnType<TestService['ctx']['kafka']['admin']>;

/** Records of `topic` past `groupId`'s commits, against `ends`. An empty partition has no commit (-1) and an end of 0. */
async function uncommitted(admin: Admin, groupId: string, topic: string, ends: { partition: number; high: string }[]): Promise<number> {
  const [c] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return ends.reduce((n, e) => n + Math.max(0, Number(e.high) - Math.max(0, Number(c.partitions.find((p) => p.partition === e.partition)?.offset ?? -1))), 0);
}

async function withAdmin<T>(svc: TestService, fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = svc.ctx.kafka.admin();
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

/** How many records `topic` holds now that `groupId` has not committed. */
export const uncommittedCount = (svc: TestService, groupId: string, topic: string): Promise<number> =>
  withAdmin(svc, async (admin) => uncommitted(admin, groupId, topic, await admin.fetchTopicOffsets(topic)));

/** Waits until `groupId` has committed every record `topic` holds when called (one admin client throughout). */
export const committedToEnd = (svc: TestService, groupId: string, topic: string, timeoutMs = 30_000): Promise<void> =>
  withAdmin(svc, async (admin) => {
    const ends = await admin.fetchTopicOffsets(topic);
    await eventually(async () => (await uncommitted(admin, groupId, topic, ends)) === 0 || null, timeoutMs, `${groupId} past the end of ${topic}`);
  });

/** Every record of `topic` up to its current end. */
export async function readTopic(svc: TestService, topic: string): Promise<KafkaMessage[]> {
  const admin = svc.ctx.kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const want = offsets.filter((o) => Number(o.high) > Number(o.low));
  const out: KafkaMessage[] = [];
  if (want.length === 0) return out;
  const consumer = svc.ctx.kafka.consumer({ groupId: `${topic}.reader.${Date.now()}`, maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const reached = new Map<number, number>();
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      out.push(message);
      reached.set(partition, Number(message.offset));
    },
  });
  await eventually(async () => want.every((o) => (reached.get(o.partition) ?? -1) >= Number(o.high) - 1), 30_000, `reading ${topic}`);
  await consumer.disconnect();
  return out;
}
