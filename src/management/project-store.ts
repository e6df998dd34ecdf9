// Projects as their owner manages them, in the control database: the owner's list, the auth
// settings a PATCH changes, and the outbox's state (its switch, its connector's supervision).
// The row the guard loads for every project route is loadProjectRow (src/http/access.ts).
import type pg from 'pg';

type Q = Pick<pg.ClientBase, 'query'>;

export interface OwnedProject {
  ref: string;
  plan: string;
  created_at: Date;
}

/** The owner's projects, oldest first. */
export async function listOwnerProjects(q: Q, ownerId: string): Promise<OwnedProject[]> {
  return (await q.query<OwnedProject>('select ref, plan, created_at from projects where owner_id = $1 order by created_at', [ownerId])).rows;
}

/** Auth settings to change; an absent one is kept. */
export interface AuthSettingsChange {
  site_url?: string;
  additional_redirect_urls?: string[];
  disable_signup?: boolean;
  allow_linking?: boolean;
}

export async function updateAuthSettings(q: Q, ref: string, c: AuthSettingsChange): Promise<void> {
  await q.query(
    `update projects set site_url = coalesce($2, site_url), additional_redirect_urls = coalesce($3, additional_redirect_urls),
            disable_signup = coalesce($4, disable_signup), allow_linking = coalesce($5, allow_linking), updated_at = now()
      where ref = $1`,
    [ref, c.site_url ?? null, c.additional_redirect_urls ?? null, c.disable_signup ?? null, c.allow_linking ?? null],
  );
}

/** When the project's outbox was enabled (null: not yet); undefined for no such project. */
export async function outboxEnabledAt(q: Q, ref: string): Promise<Date | null | undefined> {
  const r = await q.query<{ outbox_enabled_at: Date | null }>('select outbox_enabled_at from projects where ref = $1', [ref]);
  return r.rows[0]?.outbox_enabled_at;
}

/**
 * The project's connector and what the supervisor last saw of it and of its replication slot
 * (src/outbox/supervisor.ts). Every supervision column is null until the supervisor first checked
 * it; byte counts are bigints, so strings.
 */
export interface CaptureRow {
  connector_name: string | null;
  state: string | null;
  restarts: number | null;
  total_restarts: number | null;
  last_restart_at: Date | null;
  next_restart_at: Date | null;
  last_failure: string | null;
  slot_retained_bytes: string | null;
  slot_pending_bytes: string | null;
  slot_wal_status: string | null;
  slot_safe_wal_bytes: string | null;
  capture_lag_seconds: number | null;
  checked_at: Date | null;
}

export async function captureState(q: Q, ref: string): Promise<CaptureRow | undefined> {
  const r = await q.query<CaptureRow>('select p.connector_name, s.* from projects p left join connector_supervision s on s.project_ref = p.ref where p.ref = $1', [ref]);
  return r.rows[0];
}
