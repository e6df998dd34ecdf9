// The audit trail's writer: every change made through the Management API is one row in audit_log
// (who: the owner and the token used; what: an action such as webhook.create; which resource; when;
// the request id). Details name fields, never values that could be secret. Rows are written in the
// same transaction as the change where there is one, so a change and its record commit together.
// Read back by GET /v1/projects/{ref}/audit (src/management/audit-routes.ts).
import type pg from 'pg';

export type AuditAction =
  | 'project.update'
  | 'outbox.enable'
  | 'webhook.create'
  | 'webhook.update'
  | 'webhook.rotate_secret'
  | 'webhook.delete'
  | 'webhook.test'
  | 'webhook.backfill_start'
  | 'webhook.backfill_pause'
  | 'webhook.backfill_resume'
  | 'webhook.backfill_cancel'
  | 'webhook.auto_disable'
  | 'webhook.disable_notice'
  | 'endpoint.circuit_open'
  | 'endpoint.circuit_probe'
  | 'endpoint.circuit_close'
  | 'endpoint.give_up'
  | 'secret.create'
  | 'secret.replace'
  | 'secret.delete'
  | 'smtp.put'
  | 'smtp.delete'
  | 'delivery.retry'
  | 'outbox.replay'
  | 'outbox.skip_head'
  | 'outbox.recapture'
  | 'sso_provider.create'
  | 'sso_provider.update'
  | 'sso_provider.refresh_metadata'
  | 'sso_provider.delete'
  | 'sso_setup_link.create'
  | 'sso_setup_link.revoke'
  | 'sso_setup_link.test_start'
  | 'sso_setup_link.test'
  | 'sso_setup_link.activate'
  | 'user.create'
  | 'user.update'
  | 'user.delete'
  | 'auth.signing_key.rotate'
  | 'project.create'
  | 'project.set_plan';

export interface AuditEvent {
  action: AuditAction;
  resourceType: 'project' | 'outbox' | 'webhook' | 'endpoint' | 'secret' | 'smtp_settings' | 'delivery' | 'sso_provider' | 'sso_setup_link' | 'user' | 'signing_key';
  resourceId?: string | null;
  details?: Record<string, unknown>;
}

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

/** Who made a change through the API: the request, with the owner and token the owner guard set. */
export interface AuditActor {
  id: string;
  ownerId?: string;
  ownerTokenId?: string;
}

export async function recordAudit(q: Queryable, req: AuditActor, ref: string, e: AuditEvent): Promise<void> {
  await q.query(
    `insert into audit_log (project_ref, owner_id, token_id, action, resource_type, resource_id, details, request_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [ref, req.ownerId ?? null, req.ownerTokenId ?? null, e.action, e.resourceType, e.resourceId ?? null, e.details ?? {}, req.id],
  );
}

/**
 * A change made with the operator command (`npm run admin`), outside the Management API: no owner,
 * no token, no request; `operator` names who ran it (OS user@host).
 */
export async function recordOperatorAudit(q: Queryable, operator: string, ref: string, e: AuditEvent): Promise<void> {
  await q.query(
    `insert into audit_log (project_ref, operator, action, resource_type, resource_id, details)
     values ($1, $2, $3, $4, $5, $6)`,
    [ref, operator, e.action, e.resourceType, e.resourceId ?? null, e.details ?? {}],
  );
}

/**
 * A change made by the holder of an SSO setup link (the customer's IT admin, docs/sso.md): no owner
 * and no token; the link's id says who. `requestId` ties it to the request's log lines.
 */
export async function recordSetupLinkAudit(q: Queryable, linkId: string, requestId: string | null, ref: string, e: AuditEvent): Promise<void> {
  await q.query(
    `insert into audit_log (project_ref, setup_link_id, action, resource_type, resource_id, details, request_id)
     values ($1, $2, $3, $4, $5, $6, $7)`,
    [ref, linkId, e.action, e.resourceType, e.resourceId ?? null, { setup_link_id: linkId, ...e.details }, requestId],
  );
}
