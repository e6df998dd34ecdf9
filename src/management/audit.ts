// The audit trail: every change made through the Management API is one row in audit_log (who: the
// owner and the token used; what: an action such as webhook.create; which resource; when; the
// request id). Details name fields, never values that could be secret. Rows are written in the same
// transaction as the change where there is one, so a change and its record commit together.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { AppContext } from '../context.js';
import { errorResponses, iso, owner, refParams, timestamp } from './schemas.js';

export type AuditAction =
  | 'project.update'
  | 'outbox.enable'
  | 'webhook.create'
  | 'webhook.update'
  | 'webhook.rotate_secret'
  | 'webhook.delete'
  | 'secret.create'
  | 'secret.replace'
  | 'secret.delete'
  | 'smtp.put'
  | 'smtp.delete'
  | 'delivery.retry'
  | 'outbox.replay'
  | 'outbox.recapture'
  | 'sso_provider.create'
  | 'sso_provider.update'
  | 'sso_provider.refresh_metadata'
  | 'sso_provider.delete'
  | 'user.create'
  | 'user.update'
  | 'user.delete'
  | 'auth.signing_key.rotate'
  | 'project.create'
  | 'project.set_plan';

export interface AuditEvent {
  action: AuditAction;
  resourceType: 'project' | 'outbox' | 'webhook' | 'secret' | 'smtp_settings' | 'delivery' | 'sso_provider' | 'user' | 'signing_key';
  resourceId?: string | null;
  details?: Record<string, unknown>;
}

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

export async function recordAudit(q: Queryable, req: FastifyRequest, ref: string, e: AuditEvent): Promise<void> {
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

const entry = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'increasing; pass the last one as `before` for the next page' },
    action: { type: 'string' },
    resource_type: { type: 'string' },
    resource_id: { type: ['string', 'null'] },
    details: { type: 'object', additionalProperties: true },
    actor: {
      type: 'object',
      properties: {
        owner_id: { type: ['string', 'null'] },
        token_id: { type: ['string', 'null'] },
        token_name: { type: ['string', 'null'] },
        operator: { type: ['string', 'null'], description: 'set instead of an owner for changes made with npm run admin (user@host)' },
      },
    },
    request_id: { type: ['string', 'null'] },
    created_at: timestamp,
  },
} as const;

export function registerAudit(app: FastifyInstance, ctx: Pick<AppContext, 'db'>): void {
  app.get<{ Params: { ref: string }; Querystring: { limit?: string; before?: string } }>(
    '/v1/projects/:ref/audit',
    {
      schema: {
        tags: ['audit'],
        summary: 'Changes made to the project through the Management API (and by operators with npm run admin), newest first',
        ...owner,
        params: refParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'string', pattern: '^(?:[1-9][0-9]?|100)$', description: '1-100, default 50' },
            before: { type: 'string', pattern: '^[1-9][0-9]{0,17}$', description: 'only entries with a smaller id (the next page)' },
          },
        },
        response: { 200: { type: 'array', items: entry }, ...errorResponses },
      },
    },
    async (req) => {
      const limit = Number(req.query.limit ?? 50);
      const r = await ctx.db.query(
        `select a.id::text, a.action, a.resource_type, a.resource_id, a.details, a.owner_id, a.token_id, t.name as token_name,
                a.operator, a.request_id, a.created_at
           from audit_log a left join owner_tokens t on t.id = a.token_id
          where a.project_ref = $1 and ($2::bigint is null or a.id < $2::bigint)
          order by a.id desc limit $3`,
        [req.params.ref, req.query.before ?? null, limit],
      );
      return r.rows.map((x) => ({
        id: x.id,
        action: x.action,
        resource_type: x.resource_type,
        resource_id: x.resource_id,
        details: x.details,
        actor: { owner_id: x.owner_id, token_id: x.token_id, token_name: x.token_name, operator: x.operator },
        request_id: x.request_id,
        created_at: iso(x.created_at),
      }));
    },
  );
}
