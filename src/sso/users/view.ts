// Users as @supabase/auth-js expects them (its User and UserIdentity types), loaded with their
// identities. The owner's API shows the same object plus banned_until.
import type pg from 'pg';
import type { Pool } from '../../db/index.js';
import { isUuid } from '../../lib/uuid.js';
import { providerLabel } from '../sign-in/user-resolution.js';

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

interface IdentityRecord {
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

export async function loadUser(db: Db, ref: string, id: string): Promise<UserRecord | null> {
  if (!isUuid(id)) return null;
  const r = await db.query(`${SELECT} where u.project_ref = $1 and u.id = $2`, [ref, id]);
  return r.rows[0] ?? null;
}

export async function listUsers(db: Db, ref: string, limit: number, offset: number): Promise<{ users: UserRecord[]; total: number }> {
  const [r, n] = await Promise.all([
    db.query(`${SELECT} where u.project_ref = $1 order by u.created_at, u.id limit $2 offset $3`, [ref, limit, offset]),
    db.query('select count(*)::int as n from users where project_ref = $1', [ref]),
  ]);
  return { users: r.rows, total: n.rows[0].n };
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export function presentUser(u: UserRecord): Record<string, unknown> {
  return {
    id: u.id,
    aud: 'authenticated',
    role: 'authenticated',
    email: u.email ?? '',
    email_confirmed_at: iso(u.email_confirmed_at) ?? undefined,
    confirmed_at: iso(u.email_confirmed_at) ?? undefined,
    phone: '',
    last_sign_in_at: iso(u.last_sign_in_at) ?? undefined,
    app_metadata: u.app_metadata,
    user_metadata: u.user_metadata,
    identities: u.identities.map((i) => ({
      identity_id: i.id,
      id: i.subject,
      user_id: i.user_id,
      identity_data: i.identity_data,
      provider: providerLabel(i.provider_id),
      provider_type: i.provider_kind,
      email: i.email ?? undefined,
      last_sign_in_at: iso(i.last_sign_in_at) ?? undefined,
      created_at: iso(i.created_at),
      updated_at: iso(i.updated_at),
    })),
    created_at: iso(u.created_at),
    updated_at: iso(u.updated_at),
    is_anonymous: false,
  };
}
