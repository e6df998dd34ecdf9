// GET /v1/projects/{ref}/audit: the project's audit trail (written by src/projects/audit-log.ts),
// newest first, paginated by id.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { errorResponses, iso, owner, refParams, timestamp } from '../http/index.js';
import { listAuditEntries } from './audit-store.js';

const entry = {
  type: 'object',
  required: ['id', 'action', 'resource_type', 'resource_id', 'details', 'actor', 'request_id', 'created_at'],
  properties: {
    id: { type: 'string', description: 'increasing; pass the last one as `before` for the next page' },
    action: { type: 'string' },
    resource_type: { type: 'string' },
    resource_id: { type: ['string', 'null'] },
    details: { type: 'object', additionalProperties: true },
    actor: {
      type: 'object',
      required: ['owner_id', 'token_id', 'token_name', 'operator', 'setup_link_id'],
      properties: {
        owner_id: { type: ['string', 'null'] },
        token_id: { type: ['string', 'null'] },
        token_name: { type: ['string', 'null'] },
        operator: { type: ['string', 'null'], description: 'set instead of an owner for changes made with npm run admin (user@host)' },
        setup_link_id: { type: ['string', 'null'], description: "set instead of an owner for changes made through an SSO setup link by the customer's IT admin" },
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
      config: { access: 'project-owner' },
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
      const entries = await listAuditEntries(ctx.db, req.params.ref, { limit, before: req.query.before });
      return entries.map((x) => ({
        id: x.id,
        action: x.action,
        resource_type: x.resource_type,
        resource_id: x.resource_id,
        details: x.details,
        actor: { owner_id: x.owner_id, token_id: x.token_id, token_name: x.token_name, operator: x.operator, setup_link_id: x.setup_link_id },
        request_id: x.request_id,
        created_at: iso(x.created_at),
      }));
    },
  );
}
