// Backfills of a webhook for its owner (docs/delivery.md, "Backfills"):
//   POST /v1/projects/{ref}/webhooks/{id}/backfills                    start one ({filter?, rate?})
//   GET  /v1/projects/{ref}/webhooks/{id}/backfills                    the webhook's, newest first
//   GET  /v1/projects/{ref}/webhooks/{id}/backfills/{backfill_id}      one, with its progress
//   POST /v1/projects/{ref}/webhooks/{id}/backfills/{backfill_id}/pause | resume | cancel
// The work is done by the dispatcher role (src/outbox/backfill.ts); these routes only change the
// backfill's row, which the worker reads after each chunk.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { withTransaction } from '../db/index.js';
import { ApiError } from '../errors.js';
import { assertStorableJson, errorResponses, optionalBody, owner, ref, refuseBody, uuid } from '../http/index.js';
import { checkRowFilter, createBackfillCursor, dropBackfillCursor, estimateRows, type RowFilter } from '../outbox/index.js';
import { recordAudit } from '../projects/index.js';
import { withProjectDb } from './project-db.js';
import { getWebhook } from './webhook-store.js';

const stamp = { type: 'string', format: 'date-time' } as const;
const backfill = {
  type: 'object',
  required: ['id', 'webhook_id', 'state', 'filter', 'rate', 'rows_done', 'rows_estimated', 'rows_per_second', 'errors', 'last_error', 'waiting', 'created_at', 'updated_at', 'finished_at'],
  properties: {
    id: uuid,
    webhook_id: uuid,
    state: { type: 'string', enum: ['running', 'paused', 'done', 'cancelled', 'failed'] },
    filter: { type: ['object', 'null'], additionalProperties: true, description: 'the rows sent: this filter, or null (every row)' },
    rate: { type: 'integer', description: 'rows a second at most' },
    rows_done: { type: 'integer', description: 'rows enqueued (each one message, delivered like any other)' },
    rows_estimated: { type: ['integer', 'null'], description: 'rows matching when it started (counted; estimated from the table statistics when counting took over 5 s)' },
    rows_per_second: { type: ['number', 'null'], description: 'rate of the last chunk' },
    errors: { type: 'integer', description: 'failed chunks (each tried again; 10 in a row end it failed)' },
    last_error: { type: ['string', 'null'] },
    waiting: { type: ['string', 'null'], description: 'why it is not enqueueing right now: the dispatchers are behind (BACKFILL_MAX_LAG), its endpoint is failing, or its webhook is disabled; null while it goes at its rate' },
    created_at: stamp,
    updated_at: stamp,
    finished_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

const hookParams = { type: 'object', additionalProperties: false, required: ['ref', 'id'], properties: { ref, id: uuid } } as const;
const oneParams = { type: 'object', additionalProperties: false, required: ['ref', 'id', 'backfill_id'], properties: { ref, id: uuid, backfill_id: uuid } } as const;

interface Row {
  id: string;
  webhook_id: string;
  state: string;
  filter: RowFilter | null;
  rate: number;
  rows_done: string;
  rows_estimated: string | null;
  rows_per_second: number | null;
  errors: number;
  last_error: string | null;
  waiting: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

const present = (r: Row) => ({
  id: r.id,
  webhook_id: r.webhook_id,
  state: r.state,
  filter: r.filter,
  rate: r.rate,
  rows_done: Number(r.rows_done),
  rows_estimated: r.rows_estimated === null ? null : Number(r.rows_estimated),
  rows_per_second: r.rows_per_second === null ? null : Math.round(r.rows_per_second * 10) / 10,
  errors: r.errors,
  last_error: r.last_error,
  waiting: r.waiting,
  created_at: r.created_at,
  updated_at: r.updated_at,
  finished_at: r.finished_at,
});

const COLUMNS = 'id, webhook_id, state, filter, rate, rows_done, rows_estimated, rows_per_second, errors, last_error, waiting, created_at, updated_at, finished_at';

/** What each action may change: from which states, to which. */
const ACTIONS = {
  pause: { from: ['running'], to: 'paused' },
  resume: { from: ['paused'], to: 'running' },
  cancel: { from: ['running', 'paused'], to: 'cancelled' },
} as const;

export function registerBackfills(app: FastifyInstance, ctx: AppContext): void {
  const tag = { tags: ['webhooks'], ...owner };

  app.post<{ Params: { ref: string; id: string }; Body: { filter?: RowFilter | null; rate?: number } }>(
    '/v1/projects/:ref/webhooks/:id/backfills',
    {
      config: { access: 'project-owner' },
      preValidation: optionalBody,
      schema: {
        ...tag,
        summary: "Start a backfill: the table's rows (all, or those matching filter) sent as BACKFILL events in primary-key order, at rate rows a second",
        params: hookParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            filter: { type: ['object', 'null'], maxProperties: 50, description: "a row filter (the webhook's JSON form; old. is never true here); default: the webhook's filter" },
            rate: { type: 'integer', minimum: 1, maximum: 10_000, description: `rows a second at most; default BACKFILL_RATE (${ctx.cfg.BACKFILL_RATE})` },
          },
        },
        response: { 201: backfill, ...errorResponses },
      },
    },
    async (req, reply) => {
      const { ref: refName, id: webhookId } = req.params;
      const w = await getWebhook(ctx.db, refName, webhookId);
      if (!w) throw new ApiError('webhook_not_found');
      if (!w.enabled) throw new ApiError('webhook_disabled');
      if (w.ordering !== 'row') throw new ApiError('backfill_needs_row_ordering', `A backfill needs ordering "row" on the webhook (it has "${w.ordering}"), so that a row changed during the backfill never arrives older after newer: PATCH the webhook with {"ordering": "row"} first.`);
      if (req.body.filter) assertStorableJson('body.filter', req.body.filter);
      const filter = req.body.filter !== undefined ? req.body.filter : w.filter;
      const id = randomUUID();
      const estimate = await withProjectDb(ctx, refName, async (c) => {
        if (filter) await checkRowFilter(c, w.schema_name, w.table_name, filter);
        const n = await estimateRows(c, { schema: w.schema_name, table: w.table_name, filter });
        await createBackfillCursor(c, id);
        return n;
      });
      const row = await withTransaction(ctx.db, async (c) => {
        const r = await c
          .query<Row>(
            `insert into webhook_backfills (id, project_ref, webhook_id, state, filter, rate, rows_estimated) values ($1, $2, $3, 'running', $4, $5, $6) returning ${COLUMNS}`,
            [id, refName, webhookId, filter ? JSON.stringify(filter) : null, req.body.rate ?? ctx.cfg.BACKFILL_RATE, estimate],
          )
          .catch((err) => {
            if ((err as { code?: string }).code === '23505') throw new ApiError('backfill_running');
            throw err;
          });
        await recordAudit(c, req, refName, { action: 'webhook.backfill_start', resourceType: 'webhook', resourceId: webhookId, details: { backfill_id: id, filter, rate: r.rows[0].rate, rows_estimated: estimate } });
        return r.rows[0];
      }).catch(async (err) => {
        // not started: its cursor goes too
        await withProjectDb(ctx, refName, (c) => dropBackfillCursor(c, id)).catch(() => {});
        throw err;
      });
      return reply.code(201).send(present(row));
    },
  );

  app.get<{ Params: { ref: string; id: string } }>(
    '/v1/projects/:ref/webhooks/:id/backfills',
    { config: { access: 'project-owner' }, preValidation: refuseBody, schema: { ...tag, summary: "The webhook's backfills, newest first (the last 50)", params: hookParams, response: { 200: { type: 'array', items: backfill }, ...errorResponses } } },
    async (req) => {
      if (!(await getWebhook(ctx.db, req.params.ref, req.params.id))) throw new ApiError('webhook_not_found');
      const r = await ctx.db.query<Row>(`select ${COLUMNS} from webhook_backfills where project_ref = $1 and webhook_id = $2 order by created_at desc limit 50`, [req.params.ref, req.params.id]);
      return r.rows.map(present);
    },
  );

  app.get<{ Params: { ref: string; id: string; backfill_id: string } }>(
    '/v1/projects/:ref/webhooks/:id/backfills/:backfill_id',
    { config: { access: 'project-owner' }, preValidation: refuseBody, schema: { ...tag, summary: 'One backfill and its progress', params: oneParams, response: { 200: backfill, ...errorResponses } } },
    async (req) => {
      const r = await ctx.db.query<Row>(`select ${COLUMNS} from webhook_backfills where project_ref = $1 and webhook_id = $2 and id = $3`, [req.params.ref, req.params.id, req.params.backfill_id]);
      if (!r.rows[0]) throw new ApiError('backfill_not_found');
      return present(r.rows[0]);
    },
  );

  for (const [action, rule] of Object.entries(ACTIONS) as [keyof typeof ACTIONS, (typeof ACTIONS)[keyof typeof ACTIONS]][]) {
    app.post<{ Params: { ref: string; id: string; backfill_id: string } }>(
      `/v1/projects/:ref/webhooks/:id/backfills/:backfill_id/${action}`,
      {
        config: { access: 'project-owner' },
        preValidation: refuseBody,
        schema: {
          ...tag,
          summary: { pause: 'Pause a running backfill (its place is kept)', resume: 'Resume a paused backfill where it stopped', cancel: 'Cancel a running or paused backfill (rows already enqueued are still delivered)' }[action],
          params: oneParams,
          response: { 200: backfill, ...errorResponses },
        },
      },
      async (req) => {
        const { ref: refName, id: webhookId, backfill_id: id } = req.params;
        const row = await withTransaction(ctx.db, async (c) => {
          const cur = await c.query<{ state: string }>('select state from webhook_backfills where project_ref = $1 and webhook_id = $2 and id = $3 for update', [refName, webhookId, id]);
          if (!cur.rows[0]) throw new ApiError('backfill_not_found');
          const from = cur.rows[0].state;
          if (!(rule.from as readonly string[]).includes(from)) {
            if (from === 'paused' && action === 'pause') return null; // already there: answer as it is
            if (from === 'running' && action === 'resume') return null;
            throw new ApiError('backfill_finished', `The backfill is ${from}: it cannot be ${action === 'resume' ? 'resumed' : action === 'pause' ? 'paused' : 'cancelled'}.`);
          }
          const r = await c.query<Row>(
            `update webhook_backfills set state = $2, updated_at = now(), finished_at = case when $2 = 'cancelled' then now() else finished_at end, errors_in_a_row = 0
              where id = $1 returning ${COLUMNS}`,
            [id, rule.to],
          );
          await recordAudit(c, req, refName, { action: `webhook.backfill_${action}`, resourceType: 'webhook', resourceId: webhookId, details: { backfill_id: id, from } });
          return r.rows[0];
        });
        // a cancelled backfill's cursor is of no more use (the worker also drops it when it sees the cancel)
        if (row?.state === 'cancelled') await withProjectDb(ctx, refName, (c) => dropBackfillCursor(c, id)).catch((err) => ctx.log.warn({ err, backfill: id }, 'dropping a cancelled backfill\'s cursor failed'));
        if (row) return present(row);
        const r = await ctx.db.query<Row>(`select ${COLUMNS} from webhook_backfills where id = $1`, [id]);
        return present(r.rows[0]);
      },
    );
  }
}
