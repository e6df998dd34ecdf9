// Outbox deliveries, read from the projection (owner only):
//   GET /v1/projects/{ref}/outbox/deliveries?status=&kind=&cursor=&limit=   newest first, paginated
//   GET /v1/projects/{ref}/outbox/deliveries/{id}                            one delivery + attempts
// The cursor is opaque (base64url of the last row's created_at and id); pass next_cursor back to
// get the following page, which is stable even while new deliveries arrive.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { cursorQuery, decodeCursor, encodeCursor, errorResponses, isCursorTime, nextCursor, owner, pageLimit, ref, refParams, refuseBody, uuid } from '../http/index.js';
import { isUuid } from '../lib/uuid.js';
import { deliveryAttempts, getDelivery, listDeliveries, type DeliveryRow } from './delivery-store.js';

const STATUSES = ['pending', 'delivered', 'failed', 'dead'];
const KINDS = ['webhook', 'http', 'email'];
const PAGING = { defaultLimit: 20, maxLimit: 100 };

const nullable = (type: string, extra: object = {}) => ({ type: [type, 'null'], ...extra });
const stamp = nullable('string', { format: 'date-time' });
const delivery = {
  type: 'object',
  required: [
    'id', 'kind', 'status', 'target', 'method', 'webhook_id', 'run', 'attempts', 'total_attempts', 'last_http_status', 'last_smtp_code', 'last_error',
    'next_attempt_at', 'delivered_at', 'created_at', 'updated_at', 'callback', 'ordering_key', 'seq', 'waiting_for', 'test',
  ],
  properties: {
    id: { ...uuid, description: 'the message id = webhook-id' },
    kind: { type: 'string', enum: KINDS },
    status: { type: 'string', enum: STATUSES },
    target: { type: 'string', description: 'URL as written ({{secret:NAME}} kept) or the email recipient' },
    method: nullable('string'),
    webhook_id: nullable('string'),
    run: { type: 'integer', description: 'attempt sequence; a manual retry starts the next run' },
    attempts: { type: 'integer', description: 'attempts in the current run' },
    total_attempts: { type: 'integer' },
    last_http_status: nullable('integer'),
    last_smtp_code: nullable('integer'),
    last_error: nullable('string'),
    next_attempt_at: stamp,
    delivered_at: stamp,
    created_at: { type: 'string', format: 'date-time', description: 'when the message was enqueued' },
    updated_at: { type: 'string', format: 'date-time' },
    callback: {
      type: ['object', 'null'],
      required: ['function', 'status', 'error', 'attempts'],
      properties: { function: { type: 'string' }, status: nullable('string'), error: nullable('string'), attempts: { type: 'integer' } },
    },
    ordering_key: nullable('string', { description: 'ordered delivery: row:<webhook id>:<primary key> or key:<ordering_key>; null: unordered' }),
    seq: nullable('integer', { description: "the message's place in its ordering key (commit order)" }),
    waiting_for: {
      type: ['object', 'null'],
      description: 'set while the message waits behind the head of its ordering key (GET .../outbox/blocked-keys)',
      required: ['message_id', 'since'],
      properties: { message_id: { type: 'string' }, since: { type: 'string', format: 'date-time', description: 'the key is blocked since' } },
    },
    test: { type: 'boolean', description: 'a test event sent with POST .../webhooks/{id}/test, not a change of the table' },
  },
} as const;
const listResponse = {
  type: 'object',
  required: ['deliveries', 'next_cursor'],
  properties: { deliveries: { type: 'array', items: delivery }, next_cursor: nextCursor },
} as const;
const detailResponse = {
  type: 'object',
  required: [...delivery.required, 'last_response_body', 'attempt_history'],
  properties: {
    ...delivery.properties,
    last_response_body: nullable('string', { description: 'truncated to RESPONSE_BODY_LIMIT bytes' }),
    attempt_history: {
      type: 'array',
      items: {
        type: 'object',
        required: ['run', 'attempt', 'outcome', 'http_status', 'smtp_code', 'error', 'response_body', 'duration_ms', 'started_at', 'finished_at'],
        properties: {
          run: { type: 'integer' },
          attempt: { type: 'integer' },
          outcome: { type: 'string', enum: ['delivered', 'failed', 'dead'] },
          http_status: nullable('integer'),
          smtp_code: nullable('integer'),
          error: nullable('string'),
          response_body: nullable('string'),
          duration_ms: nullable('integer'),
          started_at: { type: 'string', format: 'date-time' },
          finished_at: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
} as const;

function present(row: DeliveryRow) {
  const { cursor_at: _c, message_created_at, callback_function, callback_status, callback_error, callback_attempts, last_response_body, ...rest } = row;
  return {
    ...rest,
    seq: rest.seq === null ? null : Number(rest.seq),
    created_at: message_created_at,
    callback: callback_function ? { function: callback_function, status: callback_status, error: callback_error, attempts: callback_attempts } : null,
    ...(last_response_body !== undefined ? { last_response_body } : {}),
  };
}

/** A cursor names the last row shown: its created_at (ISO, microseconds) and id. */
const cursorKey = (key: unknown[]) => key.length === 2 && isCursorTime(key[0]) && isUuid(key[1] as string);

export async function registerDeliveries(app: FastifyInstance, ctx: AppContext): Promise<void> {
  // 401, 404 (not the caller's project) before the request is validated: src/http/access.ts

  app.get<{ Params: { ref: string }; Querystring: { status?: string; kind?: string; webhook_id?: string; cursor?: string; limit?: string } }>(
    '/v1/projects/:ref/outbox/deliveries',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: {
        tags: ['outbox'],
        summary: 'List outbox deliveries, newest first',
        description: 'Filter by status (pending, delivered, failed, dead), kind (webhook, http, email) and webhook_id; page with cursor = the previous next_cursor.',
        ...owner,
        params: refParams,
        response: { 200: listResponse, ...errorResponses },
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: { type: 'string', enum: STATUSES },
            kind: { type: 'string', enum: KINDS },
            webhook_id: uuid,
            ...cursorQuery(PAGING),
          },
        },
      },
    },
    async (req) => {
      const { status, kind, cursor, webhook_id: webhookId } = req.query;
      const limit = pageLimit(req.query.limit, PAGING);
      const after = cursor ? decodeCursor(cursor, cursorKey) : undefined;
      const page = await listDeliveries(ctx.db, req.params.ref, { status, kind, webhookId: webhookId?.toLowerCase() }, limit, after && { at: after[0], id: after[1] });
      return { deliveries: page.rows.map(present), next_cursor: page.next ? encodeCursor([page.next.at, page.next.id]) : null };
    },
  );

  app.get<{ Params: { ref: string; id: string } }>(
    '/v1/projects/:ref/outbox/deliveries/:id',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: {
        tags: ['outbox'],
        summary: 'One outbox delivery with its attempt history',
        ...owner,
        response: { 200: detailResponse, ...errorResponses },
        params: {
          type: 'object',
          additionalProperties: false,
          required: ['ref', 'id'],
          properties: { ref, id: uuid },
        },
      },
    },
    async (req) => {
      // a delivery is (project, id): another project may have a delivery with the same id
      const row = await getDelivery(ctx.db, req.params.ref, req.params.id);
      if (!row) throw new ApiError('delivery_not_found');
      const attempts = await deliveryAttempts(ctx.db, req.params.ref, req.params.id);
      return { ...present(row), attempt_history: attempts };
    },
  );
}
