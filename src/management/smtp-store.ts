// A project's SMTP settings in the control database (smtp_settings, one row per project). The
// password is stored only sealed (aad.smtpPassword(ref), by the caller) and never read back here
// except as that sealed value, to keep it when a change omits it; reads say only whether one is set.
import type pg from 'pg';

type Q = Pick<pg.ClientBase, 'query'>;

export type TlsMode = 'starttls' | 'implicit' | 'none';

/** The settings as the owner may see them: `has_password` instead of the password. */
export interface SmtpRow {
  host: string;
  port: number;
  username: string | null;
  has_password: boolean;
  sender_email: string;
  sender_name: string | null;
  tls_mode: TlsMode;
  created_at: Date;
  updated_at: Date;
}

export interface SmtpFields {
  host: string;
  port: number;
  username: string | null;
  /** sealed; null: no password */
  passwordSealed: Buffer | null;
  sender_email: string;
  sender_name: string | null;
  tls_mode: TlsMode;
}

const SELECT = `select host, port, username, password_enc is not null as has_password, sender_email, sender_name, tls_mode, created_at, updated_at
                  from smtp_settings where project_ref = $1`;

export async function getSmtp(q: Q, ref: string): Promise<SmtpRow | undefined> {
  return (await q.query<SmtpRow>(SELECT, [ref])).rows[0];
}

/**
 * Locks the project's settings row (if any) until the transaction ends, and answers its sealed
 * password (null: none, or no settings yet).
 */
export async function lockSmtpPassword(q: Q, ref: string): Promise<Buffer | null> {
  const r = await q.query<{ password_enc: Buffer | null }>('select password_enc from smtp_settings where project_ref = $1 for update', [ref]);
  return r.rows[0]?.password_enc ?? null;
}

/** Creates or replaces the project's settings; `true` when they were created. */
export async function upsertSmtp(q: Q, ref: string, f: SmtpFields): Promise<boolean> {
  const r = await q.query<{ created: boolean }>(
    `insert into smtp_settings (project_ref, host, port, username, password_enc, sender_email, sender_name, tls_mode)
     values ($1, $2, $3, $4, $5, $6, $7, $8)
     on conflict (project_ref) do update set host = excluded.host, port = excluded.port, username = excluded.username,
       password_enc = excluded.password_enc, sender_email = excluded.sender_email, sender_name = excluded.sender_name,
       tls_mode = excluded.tls_mode, updated_at = now()
     returning (xmax = 0) as created`,
    [ref, f.host, f.port, f.username, f.passwordSealed, f.sender_email, f.sender_name, f.tls_mode],
  );
  return r.rows[0].created;
}

/** Deletes the project's settings; false when there were none. */
export async function deleteSmtp(q: Q, ref: string): Promise<boolean> {
  const r = await q.query('delete from smtp_settings where project_ref = $1', [ref]);
  return (r.rowCount ?? 0) > 0;
}
