// Enabling a project's outbox: create the publication (empty) and the replication slot, then
// install schema `base` and add its table to the publication (one transaction), then register its
// Debezium connector. Every step is idempotent, so this runs on every webhook creation / SMTP
// configuration / explicit request without harm.
//
// The slot is created first, synchronously, before anything can enqueue: a logical slot only
// retains changes made after it exists, and nothing can enqueue before schema `base` exists, so
// "a committed message is never lost" holds from the very first message. The publication commits
// its table with the schema, so no enqueue can fall between the two either. When the slot
// cannot be created (OUTBOX_SLOT_WAIT), schema base is not installed: base.http_request does not
// exist yet, and a call fails loudly instead of enqueueing what no slot would capture.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { repoRoot } from '../config.js';
import { OWN_SEARCH_PATH } from '../db/index.js';
import { ConnectClient } from '../kafka/index.js';
import { connectorName, publicationName, renderConnectorConfig, slotName } from './connector.js';
import { POLL_KEY } from './capture-speed.js';
import { createLogicalSlot } from './slot-create.js';
import { armMessages, chooseMessagePrefix, databaseNow, disarmUnlessRead, olderSchema, readMessagePrefix } from './messages.js';

const baseSchemaSql = readFileSync(path.join(repoRoot, 'src', 'outbox', 'sql', 'base-schema.sql'), 'utf8');
// Recorded as the comment of schema `base`, so a start can tell an installed schema from an older one.
export const baseSchemaVersion = `integrations base schema ${createHash('sha256').update(baseSchemaSql).digest('hex').slice(0, 16)}`;

export interface OutboxEnv {
  connect: ConnectClient;
  topicPrefix: string;
  outboxTopic: string;
  debeziumDbHost?: string;
  debeziumDbPort?: number;
  /** CAPTURE_SLOW_POLL in ms: the poll interval of a slow connector, which the refresh keeps (capture-speed.ts) */
  slowPollMs?: number;
  /** OUTBOX_SLOT_WAIT in ms: how long the slot's creation may wait for open transactions (0: no limit) */
  slotWaitMs?: number;
}

/** A session the slot's creation waited on: it holds a transaction id (pg_stat_activity). */
export interface SlotBlocker {
  pid: number | null;
  database: string | null;
  application: string | null;
  state: string | null;
  xact_start: string | null;
}

/**
 * The replication slot could not be created within OUTBOX_SLOT_WAIT: PostgreSQL waits for every
 * transaction with an xid in the cluster to end first. `blockers` are for the operator's log only
 * (they may name other databases of the cluster).
 */
export class SlotWaitError extends Error {
  constructor(
    readonly waitedMs: number,
    readonly blockers: SlotBlocker[],
  ) {
    super(`creating the replication slot waited ${waitedMs} ms for transactions open in the database cluster`);
  }
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  // the service's own statements: search_path pinned (db/project-dbs.ts, OWN_SEARCH_PATH)
  const c = new pg.Client({ connectionString: url, application_name: 'integrations-outbox-install', options: `-c search_path=${OWN_SEARCH_PATH}` });
  c.on('error', () => {}); // a database going away mid-install fails the query in progress, not the process
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

/** Installs (or re-installs) schema `base`; with `publication`, adds base.outbox to it if missing, in the same transaction. */
export async function installBaseSchema(databaseUrl: string, publication?: string): Promise<void> {
  await withClient(databaseUrl, (c) => installWith(c, publication));
}

async function installWith(c: pg.Client, publication?: string): Promise<void> {
  {
    await c.query('begin');
    try {
      await c.query('select pg_advisory_xact_lock(hashtext($1))', ['base-schema-install']);
      // A re-install (an upgrade, at start) must not queue behind a long customer transaction
      // that holds base.outbox and stall every enqueue behind its own lock: give up instead, and
      // the next start or enable tries again.
      await c.query(`set local lock_timeout = '5s'`);
      await c.query(baseSchemaSql);
      await c.query(`comment on schema base is ${pg.escapeLiteral(baseSchemaVersion)}`);
      // The publication (created empty before the slot: enableOutbox) gets base.outbox in this
      // transaction, so no enqueue can come before it. (Check-then-alter is safe: concurrent
      // installs wait on the advisory lock above.)
      if (publication) await addOutboxToPublication(c, publication);
      await c.query('commit');
    } catch (e) {
      await c.query('rollback').catch(() => {});
      throw e;
    }
  }
}

/** Adds base.outbox to the publication unless it is in it already. */
async function addOutboxToPublication(c: pg.Client, publication: string): Promise<void> {
  const member = await c.query(`select 1 from pg_publication_tables where pubname = $1 and schemaname = 'base' and tablename = 'outbox'`, [publication]);
  if (member.rowCount === 0) await c.query(`alter publication ${pg.escapeIdentifier(publication)} add table base.outbox`);
}

export async function enableOutbox(env: OutboxEnv, ref: string, databaseUrl: string): Promise<string> {
  const slot = slotName(ref, env.topicPrefix);
  const publication = publicationName(ref, env.topicPrefix);
  const name = connectorName(ref, env.topicPrefix);
  const current = await env.connect.config(name);
  // (the armed prefix, a secret: never logged)
  const armed = await withClient(databaseUrl, async (c) => {
    // The publication must exist before the slot: pgoutput looks it up as of each change it
    // decodes, and fails ("publication does not exist") on WAL written before it. It starts empty
    // (its table does not exist yet); only inserts matter, as the Outbox Event Router ignores the
    // deletes that keep the table empty.
    // When base.outbox already exists (enabled before, then disabled or recaptured), it joins the
    // publication here, before the slot, so nothing enqueued after the slot is left out.
    const pub = await c.query('select 1 from pg_publication where pubname = $1', [publication]);
    const table = (await c.query(`select to_regclass('base.outbox') is not null as exists`)).rows[0].exists as boolean;
    if (pub.rowCount === 0) {
      await c.query(`create publication ${pg.escapeIdentifier(publication)} ${table ? 'for table base.outbox ' : ''}with (publish = 'insert')`).catch(ignoreDuplicate);
    } else if (table) {
      await addOutboxToPublication(c, publication);
    }
    const s = await c.query('select 1 from pg_replication_slots where slot_name = $1', [slot]);
    if (s.rowCount === 0) await createSlot(c, slot, env.slotWaitMs ?? 0);
    return disarmUnlessRead(c, await readMessagePrefix(c), current);
  });
  // (the install keeps base.capture.message_prefix as it is: `armed` still holds after it)
  await installBaseSchema(databaseUrl, publication);
  await withClient(databaseUrl, async (c) => {
    const messagePrefix = chooseMessagePrefix(armed, current);
    const config = renderConnectorConfig({ ref, databaseUrl, dbHost: env.debeziumDbHost, dbPort: env.debeziumDbPort, topic: env.outboxTopic, messagePrefix }, env.topicPrefix);
    const since = await databaseNow(c);
    await env.connect.upsert(name, config);
    await env.connect.waitRunning(name);
    // not proven in time: the trigger writes rows, and the next start's refresh tries again
    if (!armed) await armMessages(env.connect, c, { connector: name, slot, prefix: messagePrefix, since, waitMs: 30_000 });
  });
  return name;
}

async function createSlot(c: pg.Client, slot: string, waitMs: number): Promise<void> {
  const r = await createLogicalSlot(c, slot, { waitMs });
  if (r.created || r.code === '42710') return; // 42710: a concurrent enable got there first
  // anything but the slot wait (an operator's cancel among them) fails as it is
  if (!r.waited) throw r.error;
  // what was it waiting for? Oldest xid first (xact_start is null for other roles' sessions
  // without pg_read_all_stats); prepared transactions hold the slot up too and are not sessions
  await c.query(`select set_config('statement_timeout', '5s', false)`);
  const open = await c.query<SlotBlocker>(
    `select * from (
       select pid, datname as database, application_name as application, state, xact_start::text as xact_start, age(backend_xid) as age
         from pg_stat_activity where backend_xid is not null and pid <> pg_backend_pid()
       union all
       select null, database, 'prepared transaction ' || gid, 'prepared', prepared::text, age(transaction)
         from pg_prepared_xacts) t
     order by age desc limit 5`,
  );
  throw new SlotWaitError(waitMs, open.rows);
}

export interface RefreshResult {
  schema: 'current' | 'reinstalled';
  /**
   * recreated: the connector was gone but its slot was not; registered again, it resumes from the
   * slot, so nothing committed meanwhile is lost. missing: connector and slot are both gone.
   */
  connector: 'current' | 'updated' | 'recreated' | 'missing';
  /**
   * restored: base.outbox had been taken out of the project's publication (by hand: nothing here
   * does it) and is in it again; what was enqueued meanwhile was not captured. missing: the
   * publication itself is gone, which the connector cannot recover from (pgoutput fails on every
   * change it decodes); `npm run admin -- recapture --ref <ref>` starts the capture again.
   */
  publication: 'current' | 'restored' | 'missing';
  /**
   * How the webhook trigger enqueues (messages.ts): current / armed (now) as logical decoding
   * messages; rows: as rows of base.outbox, since no task reading the messages could be proven.
   */
  messages: 'current' | 'armed' | 'rows';
}

/**
 * Brings an enabled project up to this build: re-installs schema `base` when it was installed from
 * another version of base-schema.sql, and re-PUTs the connector when its config differs from the
 * rendered template (Connect keeps a connector's config until it is PUT again), and puts base.outbox
 * back into the project's publication if someone took it out. Compares first, so an up-to-date
 * project costs one query and one GET from Connect: the install takes locks on base.outbox that
 * would briefly hold up enqueues, and a PUT restarts the connector. A missing connector whose slot exists is
 * registered again (it resumes from the slot); without its slot it is left alone, since Debezium
 * would create a new slot that nothing drops. Callers hold the project's outbox lock
 * (service.ts), so a disable in progress is never undone.
 */
export async function refreshOutbox(env: OutboxEnv, ref: string, databaseUrl: string): Promise<RefreshResult> {
  const pubName = publicationName(ref, env.topicPrefix);
  const name = connectorName(ref, env.topicPrefix);
  const slot = slotName(ref, env.topicPrefix);
  const current = await env.connect.config(name);
  return withClient(databaseUrl, async (c): Promise<RefreshResult> => {
    const found = await readInstalled(c, pubName);
    // (the armed prefix, a secret: never logged; the install below keeps it as it is)
    const armed = await disarmUnlessRead(c, found.prefix, current);
    const schema = found.version === baseSchemaVersion ? 'current' : 'reinstalled';
    const publication = !found.publication ? 'missing' : found.member ? 'current' : 'restored';
    // a re-install puts base.outbox back into the publication in its own transaction; with the schema
    // current, only the publication is mended: `alter publication ... add table` does not conflict
    // with enqueues, where the install's `alter table` would hold them up, or give up (lock_timeout)
    // behind a customer's open transaction and leave the table out until the next start
    if (schema === 'reinstalled') await installWith(c, found.publication ? pubName : undefined);
    else if (publication === 'restored') await addOutboxToPublication(c, pubName);

    const messagePrefix = chooseMessagePrefix(armed, current);
    const wanted = renderConnectorConfig({ ref, databaseUrl, dbHost: env.debeziumDbHost, dbPort: env.debeziumDbPort, topic: env.outboxTopic, messagePrefix }, env.topicPrefix);
    const since = armed ? '' : await databaseNow(c);
    let connector: RefreshResult['connector'];
    if (!current) {
      // Deleted from Connect (by hand, or Connect lost its config topic) while the project is enabled:
      // its slot has kept every change since, so registering it again loses nothing.
      const held = await c.query('select 1 from pg_replication_slots where slot_name = $1', [slot]);
      if (held.rowCount === 0) return { schema, connector: 'missing', publication, messages: armed ? 'current' : 'rows' };
      await env.connect.upsert(name, wanted);
      connector = 'recreated';
    } else {
      // poll.interval.ms is the supervisor's (capture-speed.ts): a slow connector stays slow; any other
      // value (set by hand, or by an older build) is brought back to the template like every other key
      if (env.slowPollMs && current[POLL_KEY] === String(env.slowPollMs)) wanted[POLL_KEY] = current[POLL_KEY];
      const keys = (o: Record<string, string>) => Object.keys(o).filter((k) => k !== 'name');
      const same = keys(current).length === keys(wanted).length && keys(wanted).every((k) => current[k] === wanted[k]);
      connector = same ? 'current' : 'updated';
      if (!same) await env.connect.upsert(name, wanted);
      // the config has the prefix from an earlier start that could not arm it: restart its tasks,
      // so that the reader the proof needs connects after `since`
      // (a stopped connector has no task to restart; its free slot is the proof)
      else if (!armed && (await env.connect.status(name))?.connector !== 'STOPPED') await env.connect.restartAll(name);
    }
    if (armed) return { schema, connector, publication, messages: 'current' };
    const ok = await armMessages(env.connect, c, { connector: name, slot, prefix: messagePrefix, since, waitMs: 30_000 });
    return { schema, connector, publication, messages: ok ? 'armed' : 'rows' };
  });
}

/**
 * What a refresh compares, in one query for a project installed by a build with messages: the
 * schema's version, the publication and its membership, and the armed prefix. A schema from before
 * messages (no base.capture, or no message_prefix in it) fails that query at parse; asked again
 * without the prefix, it has none.
 */
async function readInstalled(c: pg.Client, publication: string): Promise<{ version: string | null; publication: boolean; member: boolean; prefix: string | null }> {
  const sql = (prefix: string) =>
    `select (select obj_description(oid, 'pg_namespace') from pg_namespace where nspname = 'base') as version,
            exists (select 1 from pg_publication where pubname = $1) as publication,
            exists (select 1 from pg_publication_tables where pubname = $1 and schemaname = 'base' and tablename = 'outbox') as member,
            ${prefix} as prefix`;
  try {
    return (await c.query(sql('(select message_prefix from base.capture)'), [publication])).rows[0];
  } catch (e) {
    if (!olderSchema(e)) throw e;
    return (await c.query(sql('null::text'), [publication])).rows[0];
  }
}

/** Removes the connector, then its slot and publication (a leftover slot pins WAL forever). */
export async function disableOutbox(env: OutboxEnv, ref: string, databaseUrl: string): Promise<void> {
  await env.connect.remove(connectorName(ref, env.topicPrefix));
  const slot = slotName(ref, env.topicPrefix);
  await withClient(databaseUrl, async (c) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await c.query('select active_pid from pg_replication_slots where slot_name = $1', [slot]);
      if (r.rowCount === 0) break;
      const pid = r.rows[0].active_pid as number | null;
      if (pid === null) {
        await c.query('select pg_drop_replication_slot($1)', [slot]);
        break;
      }
      // The connector's task may take a moment to let go; after a grace period, end its backend.
      if (Date.now() > deadline) await c.query('select pg_terminate_backend($1)', [pid]);
      await new Promise((r2) => setTimeout(r2, 200));
    }
    await c.query(`drop publication if exists ${pg.escapeIdentifier(publicationName(ref, env.topicPrefix))}`);
  });
}

function ignoreDuplicate(e: { code?: string }) {
  if (e.code !== '42710') throw e; // duplicate_object: a concurrent enable got there first
}
