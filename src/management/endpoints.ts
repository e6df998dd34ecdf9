// GET /v1/projects/{ref}/outbox/endpoints: every endpoint of the project (webhook, or target host of
// base.http_request) that is not simply healthy: a circuit that is open or half-open, failures in
// the current window, or messages held (circuit or rate limit). An endpoint absent from the list
// is closed with nothing held. docs/delivery.md, "Endpoint protection".
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { endpointViews } from '../delivery/index.js';
import { errorResponses, noQuery, owner, refParams, refuseBody } from '../http/index.js';
import { circuit } from './webhooks.js';

export function registerEndpoints(app: FastifyInstance, ctx: Pick<AppContext, 'db'>): void {
  app.get<{ Params: { ref: string } }>(
    '/v1/projects/:ref/outbox/endpoints',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: {
        tags: ['outbox'],
        summary: 'Endpoints with a circuit not closed, recent failures or held messages',
        ...owner,
        params: refParams,
        querystring: noQuery,
        response: { 200: { type: 'array', items: circuit }, ...errorResponses },
      },
    },
    async (req) => endpointViews(ctx.db, req.params.ref),
  );
}
