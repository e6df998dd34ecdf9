// A database webhook's trigger enqueues a transactional logical decoding message under the
// project's prefix (base-schema.sql, base.webhook_trigger) once the prefix is set in
// base.capture.message_prefix, and a row of base.outbox until then. The prefix is set ("armed")
// only once no task of the connector can be reading with a config that lacks it: such a task (an
// older build's config) passes a message on unchanged to a topic nobody reads (the Event Router
// leaves what is not a change event alone), and the message would be lost.
//
// Proof, after the config with the prefix is PUT (or the tasks restarted) at `since` (the project
// database's clock): either the connector is STOPPED, its config carries the prefix and its slot has
// no reader (a stopped connector has no task configs; any task started later has the new config),
// or its task configs carry the prefix and the slot's reader (its walsender) connected after `since`. Until that holds, or if it never does within the wait,
// the trigger goes on writing rows: slower, never wrong; the next start tries again.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { ConnectClient } from '../kafka/index.js';

export const MESSAGE_PREFIX_KEY = 'message.prefix.include.list';
export const MESSAGE_PREFIX_PATTERN = /^base_outbox_[0-9a-f]{32}$/;

/**
 * The prefix to render into the connector's config: the database's once armed; else the one the
 * connector already has (an earlier start that could not arm it); else a new one.
 */
export function chooseMessagePrefix(armed: string | null, current: Record<string, string> | null): string {
  if (armed) return armed;
  const given = current?.[MESSAGE_PREFIX_KEY];
  if (given && MESSAGE_PREFIX_PATTERN.test(given)) return given;
  return `base_outbox_${randomBytes(16).toString('hex')}`;
}

/**
 * The project's armed prefix as it stands (null: not armed, or a schema from before messages, which
 * has no such column or no base.capture at all). One query; a refresh reads it inside its first.
 */
export async function readMessagePrefix(c: Pick<pg.Client, 'query'>): Promise<string | null> {
  try {
    return ((await c.query('select message_prefix from base.capture')).rows[0]?.message_prefix as string | null | undefined) ?? null;
  } catch (e) {
    if (olderSchema(e)) return null;
    throw e;
  }
}

/** undefined_table, undefined_column: a schema `base` installed by a build from before messages (or none) */
export function olderSchema(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return code === '42P01' || code === '42703';
}

/**
 * Before anything else of an enable or a refresh: a prefix (`armed`, as just read) that the existing
 * connector's config does not name (a rollback to a build without messages PUT its own config) is
 * cleared, so the trigger writes rows until armMessages proves a reader again. Cleared before the
 * schema's install, which would otherwise put the message-writing trigger in front of a task that
 * does not read them. Returns the prefix as it now stands. No query unless there is one to clear.
 */
export async function disarmUnlessRead(c: Pick<pg.Client, 'query'>, armed: string | null, current: Record<string, string> | null): Promise<string | null> {
  // no connector (deleted, or never made): no task reads with another config, and the one
  // registered next gets the armed prefix, so the messages its slot holds are read
  if (!current || armed === null || current[MESSAGE_PREFIX_KEY] === armed) return armed;
  // (callers hold the project's outbox lock: what was read is what is cleared)
  await c.query('update base.capture set message_prefix = null where message_prefix = $1', [armed]);
  return null;
}

/** The database's clock, read before a PUT or restart whose effect armMessages waits for. */
export async function databaseNow(c: Pick<pg.Client, 'query'>): Promise<string> {
  return (await c.query('select clock_timestamp()::text as now')).rows[0].now as string;
}

/** Sets base.capture.message_prefix once the proof above holds; false when it did not within waitMs. */
export async function armMessages(
  connect: ConnectClient,
  c: Pick<pg.Client, 'query'>,
  o: { connector: string; slot: string; prefix: string; since: string; waitMs?: number },
): Promise<boolean> {
  // Debezium asks pgoutput for messages only from PostgreSQL 14: before it, rows for good
  if (Number((await c.query(`select current_setting('server_version_num') as v`)).rows[0].v) < 140000) return false;
  const deadline = Date.now() + (o.waitMs ?? 60_000);
  for (;;) {
    const status = await connect.status(o.connector).catch(() => null);
    const slot = (
      await c.query(
        `select s.active, a.backend_start > $2::timestamptz as fresh
           from pg_replication_slots s left join pg_stat_activity a on a.pid = s.active_pid
          where s.slot_name = $1`,
        [o.slot, o.since],
      )
    ).rows[0] as { active: boolean; fresh: boolean | null } | undefined;
    let proven = false;
    if (status?.connector === 'STOPPED') {
      // stopped (KIP-875): no task, and no task configs either; a resume generates them from the
      // connector's config
      proven = slot !== undefined && !slot.active && (await connect.config(o.connector).catch(() => null))?.[MESSAGE_PREFIX_KEY] === o.prefix;
    } else if (slot?.active === true && slot.fresh === true) {
      const tasks = await connect.taskConfigs(o.connector).catch(() => []);
      proven = tasks.length > 0 && tasks.every((t) => t[MESSAGE_PREFIX_KEY] === o.prefix);
    }
    if (proven) {
      // (callers hold the project's outbox lock; should another prefix be set all the same, the
      // connector does not read it: say so rather than leave messages unread)
      const set = await c.query('update base.capture set message_prefix = coalesce(message_prefix, $1) returning message_prefix = $1 as ours', [o.prefix]);
      if (!set.rows[0]?.ours) throw new Error(`connector ${o.connector} was given a message prefix other than the one its database holds`);
      return true;
    }
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}
