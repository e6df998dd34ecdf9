// Reading a project's audit trail (audit_log, written by src/projects/audit-log.ts) with the name
// of the owner token that made each change.
import type pg from 'pg';

type Q = Pick<pg.ClientBase, 'query'>;

export interface AuditEntryRow {
  /** bigint as text: increasing */
  id: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  details: Record<string, unknown>;
  owner_id: string | null;
  token_id: string | null;
  token_name: string | null;
  operator: string | null;
  setup_link_id: string | null;
  request_id: string | null;
  created_at: Date;
}

/** The project's entries newest first, `limit` of them, only those with an id below `before` when given (a digit string). */
export async function listAuditEntries(q: Q, ref: string, page: { limit: number; before?: string }): Promise<AuditEntryRow[]> {
  const r = await q.query<AuditEntryRow>(
    `select a.id::text, a.action, a.resource_type, a.resource_id, a.details, a.owner_id, a.token_id, t.name as token_name,
            a.operator, a.setup_link_id::text, a.request_id, a.created_at
       from audit_log a left join owner_tokens t on t.id = a.token_id
      where a.project_ref = $1 and ($2::bigint is null or a.id < $2::bigint)
      order by a.id desc limit $3`,
    [ref, page.before ?? null, page.limit],
  );
  return r.rows;
}
