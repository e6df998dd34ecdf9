// A project's users in the control database (users, with their identities), for the owner's
// routes and for sign-in's sessions: load and list, create, ban and unban, confirm an email,
// delete. How a user is shown is view.ts; how sign-in finds or makes one is
// sign-in/user-resolution.ts.
import type pg from 'pg';
import type { Pool } from '../../db/index.js';
import { isUuid } from '../../lib/uuid.js';

type Db = Pool | pg.PoolClient;

export interface UserRecord {
  id: string;
  project_ref: string;
  email: string | null;
  email_confirmed_at: Date | null;
  banned_until: Date | null;
  user_metadata: Record<string, unknown>;
  app_metadata: Record<string, unknown>;
  last_sign_in_at: Date | null;
  created_at: Date;
  updated_at: Date;
  identities: IdentityRecord[];
}

export interface IdentityRecord {
  id: string;
  user_id: string;
  provider_id: string;
  provider_kind: string;
  subject: string;
  email: string | null;
  identity_data: Record<string, unknown>;
  last_sign_in_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const SELECT = `select u.*, coalesce((select json_agg(i order by i.created_at) from identities i where i.user_id = u.id), '[]') as identities from users u`;

/** One user of the project with their identities; null for an id that is not one (or not a UUID). */
export async function loadUser(db: Db, ref: string, id: string): Promise<UserRecord | null> {
  if (!isUuid(id)) return null;
  const r = await db.query(`${SELECT} where u.project_ref = $1 and u.id = $2`, [ref, id]);
  return r.rows[0] ?? null;
}

/** A page of the project's users, oldest first, and how many there are in all. */
export async function listUsers(db: Db, ref: string, limit: number, offset: number): Promise<{ users: UserRecord[]; total: number }> {
  const [r, n] = await Promise.all([
    db.query(`${SELECT} where u.project_ref = $1 order by u.created_at, u.id limit $2 offset $3`, [ref, limit, offset]),
    db.query('select count(*)::int as n from users where project_ref = $1', [ref]),
  ]);
  return { users: r.rows, total: n.rows[0].n };
}

export interface NewUser {
  /** stored in lower case */
  email: string;
  /** true: the email counts as verified from now */
  emailConfirmed: boolean;
  user_metadata: Record<string, unknown>;
  app_metadata: Record<string, unknown>;
}

/** Creates a user and answers their id; a taken email is Postgres' unique violation (23505). */
export async function insertUser(db: Db, ref: string, u: NewUser): Promise<string> {
  const r = await db.query<{ id: string }>(
    `insert into users (project_ref, email, email_confirmed_at, user_metadata, app_metadata)
     values ($1, $2, case when $3 then now() end, $4, $5) returning id`,
    [ref, u.email.toLowerCase(), u.emailConfirmed, u.user_metadata, u.app_metadata],
  );
  return r.rows[0].id;
}

/** Bans the user until `until`, or lifts the ban (null). */
export async function setBannedUntil(db: Db, userId: string, until: Date | null): Promise<void> {
  await db.query('update users set banned_until = $2, updated_at = now() where id = $1', [userId, until]);
}

/** Ends every live session of the user at once; answers how many. */
export async function revokeUserSessions(db: Db, userId: string): Promise<number> {
  const r = await db.query('update sessions set revoked_at = now() where user_id = $1 and revoked_at is null', [userId]);
  return r.rowCount ?? 0;
}

/** Marks the email verified (keeping an earlier time) or unverified. */
export async function setEmailConfirmed(db: Db, userId: string, confirmed: boolean): Promise<void> {
  await db.query('update users set email_confirmed_at = case when $2 then coalesce(email_confirmed_at, now()) end, updated_at = now() where id = $1', [userId, confirmed]);
}

/** Deletes a user of the project (identities and sessions go with it); what was deleted, or null. */
export async function deleteUser(db: Db, ref: string, id: string): Promise<{ id: string; email: string | null } | null> {
  const r = await db.query<{ id: string; email: string | null }>('delete from users where project_ref = $1 and id = $2 returning id, email', [ref, isUuid(id) ? id : null]);
  return r.rows[0] ?? null;
}
