// Outbox deliveries, read from the projection (owner only):
//   GET /v1/projects/{ref}/outbox/deliveries?status=&kind=&cursor=&limit=   newest first, paginated
//   GET /v1/projects/{ref}/outbox/deliveries/{id}                            one delivery + attempts
// The cursor is opaque (base64url of the last row's created_at and id); pass next_cursor back to
// get the following page, which is stable even while new deliveries arrive.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorResponses, owner, ref, refParams, refuseBody } from '../http/index.js';

const STATUSES = ['pending', 'delivered', 'failed', 'dead'];
const KINDS = ['webhook', 'http', 'email'];
const UUID = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

const nullable = (type: string, extra: object = {}) => ({ type: [type, 'null'], ...extra });
const stamp = nullable('string', { format: 'date-time' });
const delivery = {
  type: 'object',
  required: [
    'id', 'kind', 'status', 'target', 'method', 'webhook_id', 'run', 'attempts', 'total_attempts', 'last_http_status', 'last_smtp_code', 'last_error',
    'next_attempt_at', 'delivered_at', 'created_at', 'updated_at', 'callback',
  ],
  properties: {
    id: { type: 'string', format: 'uuid', description: 'the message id = webhook-id' },
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
  },
} as const;
const listResponse = {
  type: 'object',
  required: ['deliveries', 'next_cursor'],
  properties: { deliveries: { type: 'array', items: delivery }, next_cursor: nullable('string', { description: 'pass as cursor for the next page; null on the last' }) },
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

const COLUMNS = `id, kind, status, target, method, webhook_id, run, attempts, total_attempts, last_http_status, last_smtp_code, last_error,
  callback_function, callback_status, callback_error, callback_attempts, message_created_at, next_attempt_at, delivered_at, updated_at,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at`;

function present(row: Record<string, any>) {
  const { cursor_at: _c, message_created_at, callback_function, callback_status, callback_error, callback_attempts, last_response_body, ...rest } = row;
  return {
    ...rest,
    created_at: message_created_at,
    callback: callback_function ? { function: callback_function, status: callback_status, error: callback_error, attempts: callback_attempts } : null,
    ...(last_response_body !== undefined ? { last_response_body } : {}),
  };
}

const encodeCursor = (at: string, id: string) => Buffer.from(JSON.stringify([at, id])).toString('base64url');

function decodeCursor(cursor: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && !Number.isNaN(Date.parse(v[0])) && new RegExp(UUID).test(v[1])) return [v[0], v[1]];
  } catch {}
  throw new ApiError('validation_failed', 'querystring.cursor is not a cursor returned by this listing');
}

export async function registerDeliveries(app: FastifyInstance, ctx: AppContext): Promise<void> {
  // 401, 404 (not the caller's project) before the request is validated: src/http/owner-guard.ts

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
            webhook_id: { type: 'string', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' },
            cursor: { type: 'string', minLength: 1, maxLength: 300 },
            limit: { type: 'string', pattern: '^[0-9]{1,3}$', description: '1 to 100, default 20' },
          },
        },
      },
    },
    async (req) => {
      const { status, kind, cursor, webhook_id: webhookId } = req.query;
      const limit = req.query.limit === undefined ? 20 : Number(req.query.limit);
      if (limit < 1 || limit > 100) throw new ApiError('validation_failed', 'querystring.limit must be between 1 and 100');
      const params: unknown[] = [req.params.ref];
      const where = ['project_ref = $1'];
      if (status) where.push(`status = $${params.push(status)}`);
      if (kind) where.push(`kind = $${params.push(kind)}`);
      if (webhookId) where.push(`webhook_id = $${params.push(webhookId.toLowerCase())}::uuid`);
      if (cursor) {
        const [at, id] = decodeCursor(cursor);
        where.push(`(created_at, id) < ($${params.push(at)}::timestamptz, $${params.push(id)}::uuid)`);
      }
      const r = await ctx.db.query(`select ${COLUMNS} from deliveries where ${where.join(' and ')} order by created_at desc, id desc limit ${limit + 1}`, params);
      const page = r.rows.slice(0, limit);
      const last = page.at(-1);
      return { deliveries: page.map(present), next_cursor: r.rows.length > limit && last ? encodeCursor(last.cursor_at, last.id) : null };
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
          properties: { ref, id: { type: 'string', pattern: UUID } },
        },
      },
    },
    async (req) => {
      const r = await ctx.db.query(`select ${COLUMNS}, last_response_body from deliveries where project_ref = $1 and id = $2`, [req.params.ref, req.params.id]);
      if (r.rowCount === 0) throw new ApiError('delivery_not_found');
      const attempts = await ctx.db.query(
        `select run, attempt, outcome, http_status, smtp_code, error, response_body, duration_ms, started_at, finished_at
           from delivery_attempts where delivery_id = $1 order by run, attempt`,
        [req.params.id],
      );
      return { ...present(r.rows[0]), attempt_history: attempts.rows };
    },
  );
}
