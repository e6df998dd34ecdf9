// The local stack: a PostgreSQL cluster of the project's own, a KRaft Kafka broker and Kafka
// Connect (distributed) with the Debezium connector as a plugin, all from the machine's binaries
// and Maven Central jars, all state under STACK_DIR, all ports on loopback.
//
// Processes are started detached with their pid recorded in STACK_DIR/run, so `up` is idempotent
// (a part whose pid is alive and healthy is reused) and `down` stops exactly what `up` started.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, chownSync, statSync } from 'node:fs';
import path from 'node:path';
import { alive, portOpen, sleep, waitFor, which } from './processes.js';
import { repoRoot, type Config } from '../config.js';
import { addPluginServices, pluginServicesStamp } from './plugin-services.js';
import { log4jProperties } from './log4j.js';

export type PartName = 'postgres' | 'kafka' | 'connect';
export interface PartStatus {
  name: PartName;
  port: number;
  pid: number | null;
  healthy: boolean;
  detail: string;
}

export interface StackUrls {
  databaseUrl: string;
  adminDatabaseUrl: string;
  kafkaBrokers: string[];
  connectUrl: string;
}

type Log = (line: string) => void;

export function localStackUrls(cfg: Config): StackUrls {
  return {
    databaseUrl: `postgres://postgres@127.0.0.1:${cfg.STACK_PG_PORT}/integrations`,
    adminDatabaseUrl: `postgres://postgres@127.0.0.1:${cfg.STACK_PG_PORT}/postgres`,
    kafkaBrokers: [`127.0.0.1:${cfg.STACK_KAFKA_PORT}`],
    connectUrl: `http://127.0.0.1:${cfg.STACK_CONNECT_PORT}`,
  };
}

const dirs = (cfg: Config) => ({
  root: cfg.STACK_DIR,
  run: path.join(cfg.STACK_DIR, 'run'),
  logs: path.join(cfg.STACK_DIR, 'logs'),
  pgdata: path.join(cfg.STACK_DIR, 'pg', 'data'),
  pgsock: path.join(cfg.STACK_DIR, 'pg', 'sock'),
  lib: path.join(cfg.STACK_DIR, 'lib'),
  plugins: path.join(cfg.STACK_DIR, 'plugins'),
  kafkaData: path.join(cfg.STACK_DIR, 'kafka', 'data'),
  kafkaConf: path.join(cfg.STACK_DIR, 'kafka', 'server.properties'),
  connectConf: path.join(cfg.STACK_DIR, 'connect', 'connect-distributed.properties'),
  connectOffsets: path.join(cfg.STACK_DIR, 'connect'),
  log4j: path.join(cfg.STACK_DIR, 'log4j.properties'),
});

// ---------- process helpers ----------

function pidFile(cfg: Config, part: PartName) {
  return path.join(dirs(cfg).run, `${part}.pid`);
}

function readPid(cfg: Config, part: PartName): number | null {
  const f = pidFile(cfg, part);
  if (!existsSync(f)) return null;
  const pid = Number(readFileSync(f, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && alive(pid) ? pid : null;
}

// ---------- PostgreSQL ----------

function pgBinDir(log: Log): string {
  const find = () => {
    const base = '/usr/lib/postgresql';
    if (!existsSync(base)) return null;
    const versions = readdirSync(base)
      .filter((v) => existsSync(path.join(base, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a));
    return versions.length ? path.join(base, versions[0], 'bin') : null;
  };
  let bin = find();
  if (bin) return bin;
  if (process.getuid?.() === 0 && which('apt-get')) {
    log('PostgreSQL server binaries not found: installing them with apt-get (postgresql)…');
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'postgresql'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    bin = find();
    if (bin) return bin;
  }
  throw new Error('PostgreSQL server binaries were not found under /usr/lib/postgresql/*/bin. Install them (apt-get install postgresql) or set DATABASE_URL, KAFKA_BROKERS and KAFKA_CONNECT_URL to use an external stack.');
}

/** Postgres refuses to run as root; when we are root, run its binaries as the `postgres` user. */
function pgRunner(): { prefix: string[]; user: string | null } {
  if (process.getuid?.() !== 0) return { prefix: [], user: null };
  const r = spawnSync('id', ['-u', 'postgres']);
  if (r.status !== 0) {
    execFileSync('useradd', ['--system', '--home', '/var/lib/postgresql', '--shell', '/bin/bash', 'postgres']);
  }
  return { prefix: ['runuser', '-u', 'postgres', '--'], user: 'postgres' };
}

function chownTree(p: string, user: string) {
  execFileSync('chown', ['-R', `${user}:`, p]);
}

async function pgUp(cfg: Config, log: Log): Promise<void> {
  const d = dirs(cfg);
  const port = cfg.STACK_PG_PORT;
  if (readPid(cfg, 'postgres') && (await pgReady(cfg))) return log(`postgres: already running on 127.0.0.1:${port}`);
  if (await portOpen(port)) throw new Error(`port ${port} is taken by another process; set STACK_PG_PORT to a free port`);
  const bin = pgBinDir(log);
  const run = pgRunner();
  mkdirSync(path.dirname(d.pgdata), { recursive: true });
  mkdirSync(d.pgsock, { recursive: true });
  mkdirSync(d.logs, { recursive: true });
  if (run.user) {
    chownTree(path.dirname(d.pgdata), run.user);
  }
  if (!existsSync(path.join(d.pgdata, 'PG_VERSION'))) {
    log('postgres: initdb (first start)…');
    const initdb = [...run.prefix, path.join(bin, 'initdb'), '-D', d.pgdata, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'];
    execFileSync(initdb[0], initdb.slice(1), { stdio: 'ignore' });
    writeFileSync(
      path.join(d.pgdata, 'pg_hba.conf'),
      ['local all all trust', 'host all all 127.0.0.1/32 trust', 'host all all ::1/128 trust', 'local replication all trust', 'host replication all 127.0.0.1/32 trust'].join('\n') + '\n',
    );
    if (run.user) chownTree(d.pgdata, run.user);
  }
  // Written at every start, so a cluster made by an older version gets today's settings too (and
  // an ALTER SYSTEM made by hand on this development cluster is undone at its next start).
  // A slot and a walsender per project whose connector runs (256), and Debezium's three connections
  // besides (600): room for the benchmark's 100 projects beside the test suite's (docs/benchmark.md).
  const conf = [
    `port = ${port}`,
    `listen_addresses = '127.0.0.1'`,
    `unix_socket_directories = '${d.pgsock}'`,
    'wal_level = logical',
    'max_replication_slots = 256',
    'max_wal_senders = 256',
    'max_connections = 600',
    'shared_buffers = 256MB',
    // idle slots of deleted test databases must never pin WAL forever on a dev machine
    'max_slot_wal_keep_size = 2GB',
    'wal_sender_timeout = 0',
    // per-statement cost for profiling (create extension pg_stat_statements; see docs/benchmark.md),
    // when the binaries ship it (a missing preload library would stop the server from starting)
    ...(existsSync(path.join(bin, '..', 'lib', 'pg_stat_statements.so')) ? ["shared_preload_libraries = 'pg_stat_statements'"] : []),
  ].join('\n');
  const autoConf = path.join(d.pgdata, 'postgresql.auto.conf');
  writeFileSync(autoConf, conf + '\n');
  if (run.user) chownTree(autoConf, run.user);
  const logFile = path.join(d.logs, 'postgres.log');
  const fd = openSync(logFile, 'a');
  if (run.user) chownSync(logFile, Number(execFileSync('id', ['-u', run.user]).toString().trim()), statSync(logFile).gid);
  const argv = [...run.prefix, path.join(bin, 'postgres'), '-D', d.pgdata];
  const child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', fd, fd] });
  child.unref();
  writeFileSync(pidFile(cfg, 'postgres'), String(child.pid));
  await waitFor('postgres', () => pgReady(cfg), 30_000, logFile);
  // runuser's pid is not postgres's: record the postmaster pid for status/down.
  const pmPid = Number(readFileSync(path.join(d.pgdata, 'postmaster.pid'), 'utf8').split('\n')[0]);
  writeFileSync(pidFile(cfg, 'postgres'), String(pmPid));
  await ensureControlDb(cfg);
  log(`postgres: ready on 127.0.0.1:${port} (pid ${pmPid})`);
}

async function pgReady(cfg: Config): Promise<boolean> {
  if (!(await portOpen(cfg.STACK_PG_PORT))) return false;
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: localStackUrls(cfg).adminDatabaseUrl, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function ensureControlDb(cfg: Config) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: localStackUrls(cfg).adminDatabaseUrl });
  await client.connect();
  try {
    const r = await client.query("select 1 from pg_database where datname = 'integrations'");
    if (r.rowCount === 0) await client.query('create database integrations');
  } finally {
    await client.end();
  }
}

// ---------- Kafka ----------

function requireJava(): string {
  const java = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : which('java');
  if (!java || !existsSync(java)) {
    throw new Error('`java` was not found. The local Kafka and Kafka Connect need a JDK 17: apt-get install openjdk-17-jdk-headless (or set JAVA_HOME). With Docker, use docker-compose.yml instead.');
  }
  return java;
}

/**
 * Fetches the jars via connectors/pom.xml (once, and when it or plugin-services changes) into a directory
 * of its own; only then stops a broker or Connect running from the old jars (`up` restarts them), and moves the new ones in.
 */
export async function ensureJars(cfg: Config, log: Log): Promise<void> {
  const d = dirs(cfg);
  const marker = path.join(d.root, 'jars.ok');
  const pom = path.join(repoRoot, 'connectors', 'pom.xml');
  const pomStamp = readFileSync(pom, 'utf8') + pluginServicesStamp();
  if (existsSync(marker) && readFileSync(marker, 'utf8') === pomStamp && existsSync(d.lib) && existsSync(d.plugins)) return;
  const mvn = which('mvn');
  if (!mvn) {
    throw new Error('`mvn` (Apache Maven) was not found; it fetches Kafka, Kafka Connect and Debezium from Maven Central. Install it: apt-get install maven.');
  }
  requireJava();
  log('fetching Kafka, Kafka Connect and Debezium jars from Maven Central (first start, or connectors/pom.xml changed)…');
  const next = path.join(d.root, 'jars.next');
  rmSync(next, { recursive: true, force: true });
  execFileSync(mvn, ['-q', '-B', '-f', pom, 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${path.join(next, 'lib')}`], { stdio: 'inherit' });
  execFileSync(mvn, ['-q', '-B', '-f', pom, 'dependency:unpack@debezium', `-Dstate.dir=${next}`], { stdio: 'inherit' });
  addPluginServices(path.join(next, 'plugins'));
  for (const part of ['connect', 'kafka'] as PartName[]) {
    const pid = readPid(cfg, part);
    if (pid !== null) await stopPid(pid, part, log, 30_000).then(() => log(`${part}: stopped, since connectors/pom.xml changed its jars`));
    rmSync(pidFile(cfg, part), { force: true });
  }
  for (const [from, to] of [[path.join(next, 'lib'), d.lib], [path.join(next, 'plugins'), d.plugins]]) {
    rmSync(to, { recursive: true, force: true });
    renameSync(from, to);
  }
  rmSync(next, { recursive: true, force: true });
  writeFileSync(marker, pomStamp);
}

function writeLog4j(cfg: Config) {
  writeFileSync(dirs(cfg).log4j, log4jProperties());
}

const jvmFlags = (heap: string) => [`-Xms${heap === '512m' ? '256m' : heap}`, `-Xmx${heap}`, '-XX:+UseSerialGC', '-Djava.awt.headless=true', '-Dfile.encoding=UTF-8']; // UTF-8: Debezium decodes logical messages with the default charset

function spawnJava(cfg: Config, part: PartName, heap: string, mainClass: string, args: string[]): number {
  const d = dirs(cfg);
  const java = requireJava();
  mkdirSync(d.logs, { recursive: true });
  const logFile = path.join(d.logs, `${part}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(java, [...jvmFlags(heap), `-Dlog4j.configuration=file:${d.log4j}`, '-cp', `${d.lib}/*`, mainClass, ...args], {
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  child.unref();
  writeFileSync(pidFile(cfg, part), String(child.pid));
  return child.pid!;
}

/** How long a broker may take to answer after its start: loading thousands of partitions takes minutes. */
const KAFKA_START_MS = 300_000;

async function kafkaUp(cfg: Config, log: Log): Promise<void> {
  const d = dirs(cfg);
  const port = cfg.STACK_KAFKA_PORT;
  const running = readPid(cfg, 'kafka');
  if (running && (await kafkaReady(cfg))) return log(`kafka: already running on 127.0.0.1:${port}`);
  if (running) {
    // still starting (a broker with many partitions, e.g. after many test runs, takes minutes to
    // load them): wait for it rather than start a second one, which could not bind the
    // controller port and would leave the first one running with nobody recording its pid
    log(`kafka: starting (pid ${running}); waiting for it`);
    await waitFor('kafka', () => kafkaReady(cfg), KAFKA_START_MS, path.join(d.logs, 'kafka.log'));
    return log(`kafka: ready on 127.0.0.1:${port} (pid ${running})`);
  }
  if (await portOpen(port)) throw new Error(`port ${port} is taken by another process; set STACK_KAFKA_PORT to a free port`);
  mkdirSync(d.kafkaData, { recursive: true });
  const props = [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${cfg.STACK_KAFKA_CONTROLLER_PORT}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${cfg.STACK_KAFKA_CONTROLLER_PORT}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${d.kafkaData}`,
    'num.partitions=1',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=true',
    // webhook payloads carry rows up to 1 MB (record and old_record): leave room above that
    'message.max.bytes=8388608',
    'replica.fetch.max.bytes=8388608',
    'log.retention.hours=168',
    'delete.topic.enable=true',
  ].join('\n');
  writeFileSync(d.kafkaConf, props + '\n');
  writeLog4j(cfg);
  const idFile = path.join(d.root, 'kafka', 'cluster.id');
  if (!existsSync(path.join(d.kafkaData, 'meta.properties'))) {
    // a leading '-' would be read as an option by StorageTool (1 start in 64 failed to format)
    const clusterId = randomBytes(16).toString('base64url').slice(0, 22).replace(/^-/, 'A');
    writeFileSync(idFile, clusterId);
    execFileSync(requireJava(), ['-Xmx256m', `-Dlog4j.configuration=file:${d.log4j}`, '-cp', `${d.lib}/*`, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', d.kafkaConf, '--ignore-formatted'], { stdio: 'ignore' });
  }
  const pid = spawnJava(cfg, 'kafka', cfg.STACK_KAFKA_HEAP, 'kafka.Kafka', [d.kafkaConf]);
  await waitFor('kafka', () => kafkaReady(cfg), KAFKA_START_MS, path.join(d.logs, 'kafka.log'));
  log(`kafka: ready on 127.0.0.1:${port} (pid ${pid})`);
}

/** The broker is ready when it answers a metadata request. */
export async function kafkaReady(cfg: Config, brokers = localStackUrls(cfg).kafkaBrokers): Promise<boolean> {
  const [host, p] = brokers[0].split(':');
  if (!(await portOpen(Number(p), host))) return false;
  const { Kafka, logLevel } = await import('kafkajs');
  const admin = new Kafka({ brokers, clientId: 'stack-probe', logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 2000 }).admin();
  try {
    await admin.connect();
    await admin.fetchTopicMetadata({ topics: [] });
    return true;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

// ---------- Kafka Connect ----------

async function connectUp(cfg: Config, log: Log): Promise<void> {
  const d = dirs(cfg);
  const port = cfg.STACK_CONNECT_PORT;
  if (readPid(cfg, 'connect') && (await connectReady(localStackUrls(cfg).connectUrl))) return log(`connect: already running on 127.0.0.1:${port}`);
  if (await portOpen(port)) throw new Error(`port ${port} is taken by another process; set STACK_CONNECT_PORT to a free port`);
  mkdirSync(path.dirname(d.connectConf), { recursive: true });
  const props = [
    `bootstrap.servers=127.0.0.1:${cfg.STACK_KAFKA_PORT}`,
    'group.id=integrations-connect',
    'config.storage.topic=_connect-configs',
    'offset.storage.topic=_connect-offsets',
    'status.storage.topic=_connect-status',
    'config.storage.replication.factor=1',
    'offset.storage.replication.factor=1',
    'status.storage.replication.factor=1',
    'offset.storage.partitions=1',
    'status.storage.partitions=1',
    'key.converter=org.apache.kafka.connect.storage.StringConverter',
    'value.converter=org.apache.kafka.connect.storage.StringConverter',
    `listeners=http://127.0.0.1:${port}`,
    `rest.advertised.host.name=127.0.0.1`,
    `rest.advertised.port=${port}`,
    `plugin.path=${d.plugins}`,
    'plugin.discovery=service_load',
    // each flush makes every task read the offsets topic to its end (docs/operations.md, "The local stack")
    'offset.flush.interval.ms=10000',
    'scheduled.rebalance.max.delay.ms=0',
    'producer.max.request.size=8388608',
    'producer.linger.ms=2',
    'connector.client.config.override.policy=All',
  ].join('\n');
  writeFileSync(d.connectConf, props + '\n');
  writeLog4j(cfg);
  const pid = spawnJava(cfg, 'connect', cfg.STACK_CONNECT_HEAP, 'org.apache.kafka.connect.cli.ConnectDistributed', [d.connectConf]);
  await waitFor('kafka connect', () => connectReady(localStackUrls(cfg).connectUrl), 120_000, path.join(d.logs, 'connect.log'));
  log(`connect: ready on 127.0.0.1:${port} (pid ${pid})`);
}

/** Connect is ready when GET /health answers 200 (Kafka 3.9+). */
export async function connectReady(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}

// ---------- commands ----------

/**
 * One `up`/`down` at a time per STACK_DIR: test runs, `npm start` and `npm run stack` may all try to
 * bring the stack up at once, and two brokers racing for one port would leave a pid file pointing
 * at the loser. A lock file holding our pid serialises them; a lock whose holder died is taken over.
 */
async function withStackLock<T>(cfg: Config, fn: () => Promise<T>): Promise<T> {
  const run = dirs(cfg).run;
  mkdirSync(run, { recursive: true });
  const lock = path.join(run, 'stack.lock');
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    try {
      const fd = openSync(lock, 'wx');
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = Number(readFileSync(lock, 'utf8').trim() || 0);
      if (!holder || !alive(holder)) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`another process (pid ${holder}) has held ${lock} for 5 minutes`);
      await sleep(300);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

export async function stackUp(cfg: Config, log: Log = console.log): Promise<StackUrls> {
  requireJava();
  return withStackLock(cfg, async () => {
    await ensureJars(cfg, log);
    // Postgres and the broker start side by side; Connect needs the broker.
    await Promise.all([pgUp(cfg, log), kafkaUp(cfg, log)]);
    await connectUp(cfg, log);
    return localStackUrls(cfg);
  });
}

export async function stackStatus(cfg: Config): Promise<PartStatus[]> {
  const e = localStackUrls(cfg);
  const pg = readPid(cfg, 'postgres');
  const kafka = readPid(cfg, 'kafka');
  const connect = readPid(cfg, 'connect');
  const [pgOk, kOk, cOk] = await Promise.all([pg ? pgReady(cfg) : false, kafka ? kafkaReady(cfg) : false, connect ? connectReady(e.connectUrl) : false]);
  const describe = (pid: number | null, ok: boolean) => (pid ? (ok ? 'healthy' : 'running, not ready') : 'stopped');
  return [
    { name: 'postgres', port: cfg.STACK_PG_PORT, pid: pg, healthy: pgOk, detail: describe(pg, pgOk) },
    { name: 'kafka', port: cfg.STACK_KAFKA_PORT, pid: kafka, healthy: kOk, detail: describe(kafka, kOk) },
    { name: 'connect', port: cfg.STACK_CONNECT_PORT, pid: connect, healthy: cOk, detail: describe(connect, cOk) },
  ];
}

async function stopPid(pid: number, name: string, log: Log, graceMs: number) {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && alive(pid)) await sleep(200);
  if (alive(pid)) {
    log(`${name}: did not stop within ${graceMs / 1000}s, killing`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
    while (alive(pid)) await sleep(100);
  }
}

export async function stackDown(cfg: Config, log: Log = console.log): Promise<void> {
  await withStackLock(cfg, () => stopAll(cfg, log));
}

async function stopAll(cfg: Config, log: Log): Promise<void> {
  // Reverse order: Connect first (it commits its offsets to the broker), then the broker, then Postgres.
  for (const part of ['connect', 'kafka', 'postgres'] as PartName[]) {
    const pid = readPid(cfg, part);
    if (pid) {
      await stopPid(pid, part, log, part === 'postgres' ? 20_000 : 30_000);
      log(`${part}: stopped (pid ${pid})`);
    }
    rmSync(pidFile(cfg, part), { force: true });
  }
}

export async function stackReset(cfg: Config, log: Log = console.log): Promise<void> {
  const d = dirs(cfg);
  await withStackLock(cfg, async () => {
    await stopAll(cfg, log);
    for (const p of [path.join(d.root, 'pg'), path.join(d.root, 'kafka'), path.join(d.root, 'connect'), d.logs]) rmSync(p, { recursive: true, force: true });
  });
  rmSync(d.run, { recursive: true, force: true });
  log(`state wiped under ${d.root} (downloaded jars kept)`);
}
