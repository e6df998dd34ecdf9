// What a webhook sends, before it sends it (docs/delivery.md, "Preview and test events"):
//   POST /v1/projects/{ref}/webhooks/{id}/preview   the request a row change would make, not sent
//   POST /v1/projects/{ref}/webhooks/{id}/test      a test event, sent through the outbox
// Both take an optional sample ({type, record, old_record}); without one they use the table's
// latest row. The payload is built by the project database's own base._webhook_payload (the
// trigger's code: columns, truncation), the filter is evaluated by PostgreSQL on the sample as the
// trigger's WHEN clause would be, and the template is filled by the dispatcher's renderTemplate.
// A preview never substitutes a secret: {{secret:NAME}} stays as written.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorResponses, optionalBody, owner, ref, uuid } from '../http/index.js';
import { compileFilter, notColumns, primaryKeyColumns, refuseUserCode, tableColumns } from '../outbox/index.js';
import { renderTemplate, templateSecretNames, webhookTemplateScope } from '../delivery/index.js';
import { recordAudit } from '../projects/index.js';
import { withProjectDb } from './project-db.js';
import { getWebhook, type WebhookRow } from './webhook-store.js';

type Op = 'INSERT' | 'UPDATE' | 'DELETE';
interface SampleBody {
  type?: Op;
  record?: Record<string, unknown> | null;
  old_record?: Record<string, unknown> | null;
}
interface Sample {
  type: Op;
  record: Record<string, unknown> | null;
  old_record: Record<string, unknown> | null;
  /** 'given' or 'latest_row' */
  source: 'given' | 'latest_row';
}

const params = { type: 'object', additionalProperties: false, required: ['ref', 'id'], properties: { ref, id: uuid } } as const;
const sampleBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    type: { type: 'string', enum: ['INSERT', 'UPDATE', 'DELETE'], description: 'default INSERT' },
    record: { type: ['object', 'null'], additionalProperties: true, maxProperties: 1600, description: 'the row after the change (INSERT, UPDATE); columns left out are null' },
    old_record: { type: ['object', 'null'], additionalProperties: true, maxProperties: 1600, description: 'the row before (UPDATE, DELETE); for UPDATE, default: record' },
  },
  description: 'the sample row change; without record and old_record, the table\'s latest row (highest primary key; without one, the last row stored)',
} as const;
const requestShape = {
  type: 'object',
  required: ['method', 'url', 'headers', 'body', 'size_bytes'],
  properties: {
    method: { type: 'string' },
    url: { type: 'string' },
    headers: { type: 'object', additionalProperties: { type: 'string' }, description: '{{secret:NAME}} kept as written; webhook-id, webhook-timestamp and webhook-signature are made at send time' },
    body: { description: 'the JSON body as it would be sent (secrets kept as placeholders)' },
    size_bytes: { type: 'integer' },
  },
} as const;
const previewResponse = {
  type: 'object',
  required: ['fires', 'not_sent_because', 'sample', 'request'],
  properties: {
    fires: { type: 'boolean', description: 'whether this change would enqueue a message (events, update_columns, filter, enabled)' },
    not_sent_because: { type: 'array', items: { type: 'string' } },
    sample: { type: 'object', required: ['type', 'source'], properties: { type: { type: 'string' }, source: { type: 'string', enum: ['given', 'latest_row'] } } },
    request: requestShape,
  },
} as const;
const testResponse = {
  type: 'object',
  required: ['message_id', 'delivery'],
  properties: { message_id: uuid, delivery: { type: 'string', description: 'GET this path for the delivery (marked test: true)' } },
} as const;

const rel = (w: WebhookRow) => `${pg.escapeIdentifier(w.schema_name)}.${pg.escapeIdentifier(w.table_name)}`;

/** The sample as the table types it (jsonb_populate_record, as a trigger's NEW would be), or the table's latest row. */
async function sampleOf(c: pg.ClientBase, w: WebhookRow, b: SampleBody | null | undefined): Promise<Sample> {
  const type = b?.type ?? 'INSERT';
  // to_jsonb runs a type's cast to json, jsonb_populate_record (here and in notSentBecause) a
  // domain's check, on the service's connection
  await refuseUserCode(c, w.schema_name, w.table_name, true);
  if (b?.record === undefined && b?.old_record === undefined) {
    const key = await primaryKeyColumns(c, w.schema_name, w.table_name);
    const order = key.length ? key.map((k) => `${pg.escapeIdentifier(k)} desc`).join(', ') : 'ctid desc';
    const r = await c.query(`select to_jsonb(t) as row from ${rel(w)} t order by ${order} limit 1`);
    if (!r.rows[0]) throw new ApiError('no_sample_row', `${w.schema_name}.${w.table_name} has no row: give a sample ({"record": {...}}).`);
    const row = r.rows[0].row;
    return { type, record: type === 'DELETE' ? null : row, old_record: type === 'INSERT' ? null : row, source: 'latest_row' };
  }
  const record = type === 'DELETE' ? null : (b.record ?? null);
  const old = type === 'INSERT' ? null : type === 'UPDATE' ? (b.old_record ?? record) : (b.old_record ?? null);
  if (type !== 'DELETE' && !record) throw new ApiError('invalid_sample', `a ${type} sample needs record.`);
  if (type === 'DELETE' && !old) throw new ApiError('invalid_sample', 'a DELETE sample needs old_record.');
  const columns = new Set(await tableColumns(c, w.schema_name, w.table_name));
  for (const [name, row] of [['record', record], ['old_record', old]] as const) {
    const unknown = Object.keys(row ?? {}).filter((k) => !columns.has(k));
    if (unknown.length) throw notColumns(name, unknown, w.schema_name, w.table_name, 'invalid_sample');
  }
  const typed = async (row: Record<string, unknown> | null, name: string) => {
    if (!row) return null;
    try {
      return (await c.query(`select to_jsonb(jsonb_populate_record(null::${rel(w)}, $1)) as row`, [JSON.stringify(row)])).rows[0].row;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      if (e.code && /^(22|42)/.test(e.code)) throw new ApiError('invalid_sample', `${name}: ${e.message}`);
      throw err;
    }
  };
  return { type, record: await typed(record, 'record'), old_record: await typed(old, 'old_record'), source: 'given' };
}

/** Why this change would not enqueue a message (empty: it would). The filter is PostgreSQL's own verdict on the sample. */
async function notSentBecause(c: pg.ClientBase, w: WebhookRow, s: Sample): Promise<string[]> {
  const why: string[] = [];
  if (!w.enabled) why.push('the webhook is disabled');
  if (!w.events.includes(s.type)) why.push(`${s.type} is not among its events (${w.events.join(', ')})`);
  if (s.type === 'UPDATE' && w.update_columns?.length) {
    const same = w.update_columns.every((col) => JSON.stringify(s.record?.[col] ?? null) === JSON.stringify(s.old_record?.[col] ?? null));
    if (same) why.push(`none of update_columns (${w.update_columns.join(', ')}) changed`);
  }
  if (w.filter) {
    const alias = s.type === 'INSERT' ? { row: 'new', old: null } : s.type === 'UPDATE' ? { row: 'new', old: 'old' } : { row: 'old', old: 'old' };
    const { sql } = compileFilter(w.filter, alias);
    const r = await c.query(`select coalesce((${sql}), false) as m from jsonb_populate_record(null::${rel(w)}, $1) as new, jsonb_populate_record(null::${rel(w)}, $2) as old`, [
      JSON.stringify(s.record ?? {}),
      JSON.stringify(s.old_record ?? {}),
    ]);
    if (!r.rows[0].m) why.push('the row filter does not match');
  }
  return why;
}

/** The payload as the trigger builds it (columns, truncation), by the project database's own function. */
async function payloadOf(c: pg.ClientBase, w: WebhookRow, s: Sample, extra: Record<string, unknown> | null): Promise<Record<string, unknown>> {
  const r = await c.query(`select base._webhook_payload($1, $2, $3, $4, $5, $6, $7) as p`, [
    w.id, s.type, w.schema_name, w.table_name, s.record && JSON.stringify(s.record), s.old_record && JSON.stringify(s.old_record), w.columns && JSON.stringify(w.columns),
  ]);
  return { ...r.rows[0].p, ...(extra ?? {}) };
}

export function registerWebhookPreview(app: FastifyInstance, ctx: AppContext): void {
  const tag = { tags: ['webhooks'], ...owner };

  async function webhook(refName: string, id: string): Promise<WebhookRow> {
    const w = await getWebhook(ctx.db, refName, id);
    if (!w) throw new ApiError('webhook_not_found');
    return w;
  }

  app.post<{ Params: { ref: string; id: string }; Body: SampleBody | null }>(
    '/v1/projects/:ref/webhooks/:id/preview',
    {
      config: { access: 'project-owner' },
      preValidation: optionalBody,
      schema: { ...tag, summary: 'The request a row change would make (filter, columns, template applied), without sending it', params, body: sampleBody, response: { 200: previewResponse, ...errorResponses } },
    },
    async (req) => {
      const w = await webhook(req.params.ref, req.params.id);
      const messageId = '00000000-0000-0000-0000-000000000000';
      return withProjectDb(ctx, req.params.ref, async (c) => {
        const s = await sampleOf(c, w, req.body);
        const why = await notSentBecause(c, w, s);
        const payload = await payloadOf(c, w, s, null);
        // secrets stay placeholders: each name maps to its own placeholder text
        const secrets = new Map(templateSecretNames(w.template).map((n) => [n, `{{secret:${n}}}`]));
        const body = w.template === null || w.template === undefined ? payload : renderTemplate(w.template, webhookTemplateScope(messageId, payload as never), secrets);
        const headers = { ...w.headers, 'content-type': 'application/json' };
        return { fires: why.length === 0, not_sent_because: why, sample: { type: s.type, source: s.source }, request: { method: 'POST', url: w.url, headers, body, size_bytes: Buffer.byteLength(JSON.stringify(body), 'utf8') } };
      });
    },
  );

  app.post<{ Params: { ref: string; id: string }; Body: SampleBody | null }>(
    '/v1/projects/:ref/webhooks/:id/test',
    {
      config: { access: 'project-owner' },
      preValidation: optionalBody,
      schema: {
        ...tag,
        summary: 'Send a test event to the webhook now: the sample (or the latest row) as a real message, marked test, whatever its events and filter',
        params,
        body: sampleBody,
        response: { 202: testResponse, ...errorResponses },
      },
    },
    async (req, reply) => {
      const { ref: refName, id } = req.params;
      const w = await webhook(refName, id);
      if (!w.enabled) throw new ApiError('webhook_disabled');
      const messageId = randomUUID();
      // marked first: the delivery the dispatcher records is a test from its first attempt on
      await ctx.db.query('insert into webhook_test_events (project_ref, message_id, webhook_id) values ($1, $2, $3)', [refName, messageId, id]);
      try {
        await withProjectDb(ctx, refName, async (c) => {
          const s = await sampleOf(c, w, req.body);
          const payload = await payloadOf(c, w, s, { test: true });
          await c.query('select base._webhook_message($1, $2, null, $3)', [id, JSON.stringify(payload), messageId]);
        });
      } catch (err) {
        await ctx.db.query('delete from webhook_test_events where project_ref = $1 and message_id = $2', [refName, messageId]).catch(() => {});
        throw err;
      }
      await recordAudit(ctx.db, req, refName, { action: 'webhook.test', resourceType: 'webhook', resourceId: id, details: { message_id: messageId } });
      return reply.code(202).send({ message_id: messageId, delivery: `/v1/projects/${refName}/outbox/deliveries/${messageId}` });
    },
  );
}
