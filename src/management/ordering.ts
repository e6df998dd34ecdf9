// Ordered delivery for the owner (docs/delivery.md, "Ordered delivery"):
//   GET  /v1/projects/{ref}/outbox/blocked-keys        keys whose head waits, longest blocked first
//   POST /v1/projects/{ref}/outbox/blocked-keys/skip   {"ordering_key"}: end the head dead, the key moves on
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { cursorQuery, decodeCursor, encodeCursor, errorResponses, isCursorTime, nextCursor, owner, pageLimit, refParams, refuseBody, storable, STORABLE_TEXT } from '../http/index.js';
import { listBlockedKeys, skipHead } from '../delivery/index.js';
import { recordAudit } from '../projects/index.js';

const PAGING = { defaultLimit: 50, maxLimit: 200 };
const KEY_MAX = 1000;

const blockedKey = {
  type: 'object',
  required: ['ordering_key', 'webhook_id', 'since', 'head', 'queued'],
  properties: {
    ordering_key: { type: 'string', description: 'row:<webhook id>:<primary key as a JSON array>, or key:<ordering_key of base.http_request>' },
    webhook_id: { type: ['string', 'null'] },
    since: { type: 'string', format: 'date-time', description: 'blocked since (kept while one head follows another)' },
    head: {
      type: 'object',
      description: 'the delivery every later message of the key waits for',
      required: ['message_id', 'run', 'seq', 'reason', 'since'],
      properties: {
        message_id: { type: 'string' },
        run: { type: 'integer' },
        seq: { type: 'integer' },
        reason: { type: 'string', enum: ['retry', 'held', 'next'], description: 'retry: failed, on the retry ladder; held: its endpoint holds it; next: just taken from the queue' },
        since: { type: 'string', format: 'date-time' },
      },
    },
    queued: { type: 'integer', description: 'messages waiting behind the head' },
  },
} as const;

export async function registerOrdering(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get<{ Params: { ref: string }; Querystring: { cursor?: string; limit?: string } }>(
    '/v1/projects/:ref/outbox/blocked-keys',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: {
        tags: ['outbox'],
        summary: 'Ordering keys whose head delivery has not ended, with how many messages wait behind it',
        ...owner,
        params: refParams,
        querystring: { type: 'object', additionalProperties: false, properties: cursorQuery(PAGING) },
        response: { 200: { type: 'object', required: ['keys', 'next_cursor'], properties: { keys: { type: 'array', items: blockedKey }, next_cursor: nextCursor } }, ...errorResponses },
      },
    },
    async (req) => {
      const limit = pageLimit(req.query.limit, PAGING);
      const after = req.query.cursor ? decodeCursor(req.query.cursor, (k) => k.length === 2 && isCursorTime(k[0]) && storable(k[1] as string)) : undefined;
      const page = await listBlockedKeys(ctx.db, req.params.ref, limit, after && { since: after[0], key: after[1] });
      return { keys: page.keys, next_cursor: page.next ? encodeCursor([page.next.since, page.next.key]) : null };
    },
  );

  app.post<{ Params: { ref: string }; Body: { ordering_key: string } }>(
    '/v1/projects/:ref/outbox/blocked-keys/skip',
    {
      config: { access: 'project-owner' },
      schema: {
        tags: ['outbox'],
        summary: "Unblock an ordering key: its head delivery ends dead (not attempted again) and the next message of the key goes",
        description: 'The skipped delivery can still be retried by hand (POST .../deliveries/{id}/retry), which sends it after the messages of its key already delivered only if none of them is newer (409 delivery_superseded otherwise).',
        ...owner,
        params: refParams,
        body: { type: 'object', additionalProperties: false, required: ['ordering_key'], properties: { ordering_key: { type: 'string', minLength: 1, maxLength: KEY_MAX, pattern: STORABLE_TEXT } } },
        response: {
          200: {
            type: 'object',
            required: ['skipped', 'next'],
            properties: {
              skipped: { type: 'object', required: ['message_id'], properties: { message_id: { type: 'string' } } },
              next: { type: 'string', enum: ['next', 'drained', 'not_head'], description: 'next: the following message of the key was sent on; drained: none waited, the key flows again' },
            },
          },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      const out = await skipHead(ctx, req.params.ref, req.body.ordering_key);
      if (!out) throw new ApiError('ordering_key_not_blocked', `The ordering key ${JSON.stringify(req.body.ordering_key)} is not blocked in this project.`);
      await recordAudit(ctx.db, req, req.params.ref, { action: 'outbox.skip_head', resourceType: 'delivery', resourceId: out.message_id, details: { ordering_key: req.body.ordering_key } });
      return { skipped: { message_id: out.message_id }, next: out.next };
    },
  );
}
