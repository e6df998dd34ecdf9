// Recovery routes (owner only), on top of src/delivery/recovery/replay.ts:
//   POST /v1/projects/{ref}/outbox/deliveries/{id}/retry   one failed or dead delivery, as a new run
//   POST /v1/projects/{ref}/outbox/replay                  every dead (or failed) delivery matching a filter
// Both answer 202: the messages are back on the log as run + 1 and the deliveries are `pending`;
// the outcome follows as usual. The budget restarts with the new run (MAX_ATTEMPTS attempts,
// MAX_MESSAGE_AGE from the retry).
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { replayDeliveries, type ReplayStatus } from '../delivery/index.js';
import { recordAudit } from '../projects/index.js';
import { errorResponses, owner, ref, refParams, refuseBody, uuid } from '../http/index.js';
import { deliveryState } from './delivery-store.js';

const replayAnswer = {
  description: 'the matching deliveries are back on the log as new runs',
  type: 'object',
  required: ['matched', 'replayed', 'superseded', 'already_retried', 'not_found', 'not_found_ids'],
  properties: {
    matched: { type: 'integer' },
    replayed: { type: 'integer' },
    superseded: { type: 'integer', description: 'ordered deliveries left out: a later message of their ordering key was delivered or is on its way (docs/delivery.md, Ordered delivery)' },
    already_retried: { type: 'integer', description: 'matched, but another retry or replay running at the same time enqueued their new run first (not sent again by this one)' },
    not_found: { type: 'integer', description: 'matched, but no longer on the log (retention passed)' },
    not_found_ids: { type: 'array', items: { type: 'string' }, description: 'the first 100 of those' },
  },
} as const;
const conflict = { 409: { description: 'delivery_not_retryable, or delivery_superseded (an ordered delivery whose key has a later message delivered or on its way)', type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } } };

interface ReplayBody {
  status?: ReplayStatus | ReplayStatus[];
  since?: string;
  until?: string;
  webhook_id?: string;
  host?: string;
}

/**
 * A date-time of the body as an instant. The schema's format takes RFC 3339's leap second
 * (23:59:60), which JavaScript's Date cannot hold: refused here rather than sent on as NaN.
 */
function instant(field: string, value: string): Date {
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new ApiError('validation_failed', `body.${field} is not an instant this service can use (a leap second is not): ${JSON.stringify(value)}`);
  return d;
}

export async function registerDeliveryRetry(app: FastifyInstance, ctx: AppContext): Promise<void> {
  // 401, 404 (not the caller's project) before the request is validated: src/http/access.ts

  app.post<{ Params: { ref: string; id: string } }>(
    '/v1/projects/:ref/outbox/deliveries/:id/retry',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: {
        tags: ['outbox'],
        summary: 'Retry a failed or dead delivery now, as a new run',
        description:
          'Reads the message back from the log and enqueues it again as run + 1 (status pending, a fresh budget of attempts and age). A retry still scheduled for the old run is dropped. A delivered delivery answers 409 delivery_not_retryable; so does a pending one (its run has not ended).',
        ...owner,
        params: { type: 'object', additionalProperties: false, required: ['ref', 'id'], properties: { ref, id: uuid } },
        response: { ...errorResponses, ...conflict },
      },
    },
    async (req, reply) => {
      const id = req.params.id.toLowerCase();
      const current = await deliveryState(ctx.db, req.params.ref, id);
      if (!current) throw new ApiError('delivery_not_found');
      const { status } = current;
      if (status !== 'failed' && status !== 'dead') {
        throw new ApiError('delivery_not_retryable', status === 'delivered' ? 'The delivery was delivered; it cannot be retried.' : 'The delivery has not finished its current attempt; retry it once it is failed or dead.');
      }
      const out = await replayDeliveries(ctx, req.params.ref, { statuses: [status], ids: [id] });
      if (out.superseded.length > 0) throw new ApiError('delivery_superseded');
      if (out.taken.length > 0) throw new ApiError('delivery_not_retryable', 'The delivery was retried meanwhile (another request took this run); look at it again.');
      if (out.replayed === 0) {
        if (out.matched === 0) throw new ApiError('delivery_not_retryable', 'The delivery changed state meanwhile; look at it again.');
        throw new ApiError('delivery_not_retryable', 'The message is no longer on the log (retention passed), so it cannot be sent again.');
      }
      await recordAudit(ctx.db, req, req.params.ref, { action: 'delivery.retry', resourceType: 'delivery', resourceId: id, details: { from_status: status, run: out.runs[id] } });
      reply.code(202);
      return { id, status: 'pending', run: out.runs[id] };
    },
  );

  app.post<{ Params: { ref: string }; Body: ReplayBody }>(
    '/v1/projects/:ref/outbox/replay',
    {
      config: { access: 'project-owner' },
      schema: {
        tags: ['outbox'],
        summary: 'Re-enqueue the dead (or failed) deliveries matching a filter, e.g. after an outage',
        description:
          'status: dead (default), failed, or both as a list; since/until: enqueue time range [since, until); webhook_id; host: the target URL host. Messages are read back from the dead topic (failed ones from the retry topics) and enqueued again as new runs. Answers how many matched and were replayed, and the ids no longer on the log.',
        ...owner,
        params: refParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: {
              oneOf: [
                { type: 'string', enum: ['dead', 'failed'] },
                { type: 'array', items: { type: 'string', enum: ['dead', 'failed'] }, minItems: 1, maxItems: 2, uniqueItems: true },
              ],
            },
            since: { type: 'string', format: 'date-time' },
            until: { type: 'string', format: 'date-time' },
            webhook_id: uuid,
            host: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9.:\\[\\]-]+$' },
          },
        },
        response: { 202: replayAnswer, ...errorResponses },
      },
    },
    async (req, reply) => {
      const b = req.body ?? {};
      const statuses = b.status === undefined ? (['dead'] as ReplayStatus[]) : Array.isArray(b.status) ? b.status : [b.status];
      const since = b.since ? instant('since', b.since) : undefined;
      const until = b.until ? instant('until', b.until) : undefined;
      if (since && until && since >= until) throw new ApiError('validation_failed', 'body.since must be before body.until');
      const out = await replayDeliveries(ctx, req.params.ref, { statuses, since, until, webhookId: b.webhook_id?.toLowerCase(), host: b.host });
      await recordAudit(ctx.db, req, req.params.ref, {
        action: 'outbox.replay',
        resourceType: 'outbox',
        details: { status: statuses, since: b.since ?? null, until: b.until ?? null, webhook_id: b.webhook_id ?? null, host: b.host ?? null, replayed: out.replayed },
      });
      reply.code(202);
      return { matched: out.matched, replayed: out.replayed, superseded: out.superseded.length, already_retried: out.taken.length, not_found: out.not_found.length, not_found_ids: out.not_found.slice(0, 100) };
    },
  );
}
