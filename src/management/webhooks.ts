// Database webhooks: /v1/projects/{ref}/webhooks[/{id}]. A webhook lives in the control database;
// its trigger lives on the watched table in the project database and enqueues into base.outbox.
// Creating one enables the project's outbox first (schema base, slot, Debezium connector), so the
// trigger has a function to call and nothing it enqueues can be missed.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { withTransaction } from '../db/index.js';
import { makeAllowList } from '../outbound/index.js';
import { ApiError } from '../errors.js';
import { checkRowFilter, notColumns, tableColumns, ensureOutboxEnabled, dropWebhookTrigger, installWebhookTrigger, primaryKeyColumns, type RowFilter, type WebhookOrdering } from '../outbox/index.js';
import { recordAudit } from '../projects/index.js';
import { missingColumns, tableExists, withProjectDb } from './project-db.js';
import { MANAGEMENT_BODY_LIMIT, assertStorableJson, errorResponses, noQuery, owner, ref, refuseBody, TEXT, timestamp, uuid } from '../http/index.js';
import { MAX_HEADERS, HEADER_VALUE_MAX, TIMEOUT_MAX_MS, TIMEOUT_MIN_MS, URL_MAX_LENGTH, checkHeaders, checkUpdateColumnsEvents, checkWebhookUrl, parseTableName, UPDATE_COLUMNS_MAX, type WebhookEvent } from './webhook-input.js';
import {
  addSigningSecret, deleteWebhook, getWebhook, insertWebhook, listWebhooks, rotateSigningSecret, updateWebhook, webhookRecord,
  type EndpointExtras,
  type SignatureScheme,
  type WebhookFields,
  type WebhookRow,
} from './webhook-store.js';
import { checkTemplate, endpointViews, healthyCircuit, replayOffer, resetWebhookCircuit, type CircuitView } from '../delivery/index.js';

type Ctx = Pick<AppContext, 'db' | 'box' | 'cfg' | 'log' | 'projectDbs' | 'connect' | 'topics'>;

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 200, pattern: TEXT, description: 'display name; defaults to the table' },
  table: { type: 'string', minLength: 3, maxLength: 200, pattern: TEXT, description: 'schema.table, schema public or api; must exist' },
  events: { type: 'array', minItems: 1, maxItems: 3, uniqueItems: true, items: { type: 'string', enum: ['INSERT', 'UPDATE', 'DELETE'] } },
  update_columns: {
    type: ['array', 'null'],
    minItems: 1,
    maxItems: UPDATE_COLUMNS_MAX,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: 63, pattern: TEXT },
    description: 'UPDATE fires only when one of these columns changed value; null: every UPDATE fires. Needs UPDATE in events; the columns must exist',
  },
  url: { type: 'string', minLength: 1, maxLength: URL_MAX_LENGTH, pattern: TEXT, description: 'http(s); literal private addresses are refused' },
  headers: {
    type: 'object',
    maxProperties: MAX_HEADERS,
    additionalProperties: { type: 'string', maxLength: HEADER_VALUE_MAX },
    description: 'extra request headers; values may contain {{secret:NAME}}',
  },
  timeout_ms: { type: 'integer', minimum: TIMEOUT_MIN_MS, maximum: TIMEOUT_MAX_MS, description: `default 10000` },
  enabled: { type: 'boolean', description: 'default true; false removes the trigger until re-enabled. true also ends a disabling by the service (disabled_reason) and resets the circuit' },
  rate_limit: {
    type: ['integer', 'null'],
    minimum: 1,
    maximum: 10_000,
    description: 'at most this many requests per second to the URL, across all dispatcher processes; messages beyond it wait (no attempt spent). null: no limit',
  },
  ordering: {
    type: 'string',
    enum: ['none', 'row'],
    description:
      'row: the changes of one row (its primary key; the old key for a key change) are delivered one after the other in commit order, each after the previous one has a final outcome; other rows never wait. none: every change is sent as soon as it is read. Default: row when the table has a primary key, else none (docs/delivery.md, Ordered delivery, says why); row on a table without one is refused',
  },
  filter: {
    type: ['object', 'null'],
    maxProperties: 50,
    description:
      'row filter: only changes whose row matches fire the webhook, decided in the trigger (nothing is enqueued for the others). JSON: {"status": "paid"}, {"amount": {"gt": 100}}, {"status": {"in": ["paid","shipped"]}}, {"deleted_at": {"null": true}}, {"old.status": {"ne": "paid"}}, {"and"|"or": [...]}, {"not": {...}}; operators eq, ne, gt, gte, lt, lte, in, not_in, null. Checked against the table when saved: 400 column_not_found or invalid_filter. null (default): every change; see docs/delivery.md, Row filters',
  },
  columns: {
    type: ['array', 'null'],
    minItems: 1,
    maxItems: 1600,
    uniqueItems: true,
    items: { type: 'string', minLength: 1, maxLength: 63, pattern: TEXT },
    description: 'payload shaping: the columns record and old_record carry, chosen in the trigger (the others never leave the project database); null (default): every column. Must be columns of the table: 400 column_not_found',
  },
  template: {
    anyOf: [{ type: 'object', additionalProperties: true }, { type: 'array' }, { type: 'null' }],
    description:
      'payload shaping: the request body as JSON with placeholders, filled at send time: {{type}}, {{schema}}, {{table}}, {{occurred_at}}, {{webhook_id}}, {{message_id}}, {{test}}, {{truncated}}, {{truncated_columns}}, {{payload}}, {{record}}, {{record.column}}, {{old_record.column}} (paths go on: .field, [0], ["any name"]), {{secret:NAME}}. A string that is one placeholder becomes its value (number, object, null); inside text it is written as text. No code runs. null (default): the row-change payload. Checked when saved: 400 invalid_template or column_not_found; see docs/delivery.md, Payload shaping',
  },
  max_in_flight: {
    type: ['integer', 'null'],
    minimum: 1,
    maximum: 1000,
    description: 'at most this many requests in flight to the URL per dispatcher process, on top of the adaptive window (slow start, docs/delivery.md). null (default): the adaptive window alone',
  },
  signature_scheme: {
    type: 'string',
    enum: ['v1', 'v1a'],
    description: 'v1 (default): HMAC-SHA256 with a shared whsec_ secret; v1a: ed25519, receivers verify with public_key. Changing it issues a new key; the previous one keeps signing for the grace period',
  },
} as const;

const createBody = { type: 'object', additionalProperties: false, required: ['table', 'events', 'url'], properties: fields } as const;
const patchBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { ...fields, rotate_secret: { type: 'boolean', description: 'true issues a new signing secret, returned once' } },
} as const;

export const circuit = {
  type: 'object',
  description: 'the circuit breaker of this endpoint (docs/delivery.md, Endpoint protection)',
  required: ['endpoint', 'webhook_id', 'state', 'held_messages', 'failures_in_window', 'attempts_in_window', 'last_error', 'last_failure_at', 'opened_at', 'next_probe_at', 'failing_since', 'probes', 'failed_probes'],
  properties: {
    endpoint: { type: 'string', description: 'webhook:<id> or host:<hostname>' },
    webhook_id: { type: ['string', 'null'] },
    state: { type: 'string', enum: ['closed', 'open', 'half_open'] },
    held_messages: { type: 'integer', description: 'messages waiting for this endpoint (no attempt spent)' },
    failures_in_window: { type: 'integer' },
    attempts_in_window: { type: 'integer' },
    last_error: { type: ['string', 'null'] },
    last_failure_at: { type: ['string', 'null'], format: 'date-time' },
    opened_at: { type: ['string', 'null'], format: 'date-time' },
    next_probe_at: { type: ['string', 'null'], format: 'date-time' },
    failing_since: { type: ['string', 'null'], format: 'date-time' },
    probes: { type: 'integer' },
    failed_probes: { type: 'integer' },
  },
} as const;

const record = {
  type: 'object',
  // Every field but replay_offer (and signing_secret, in withSecret) is always there, but only those
  // before replay_offer are listed: fast-json-stringify writes required fields first, so listing a
  // later one would move replay_offer behind it and change the order of the answer's fields.
  required: ['id', 'name', 'table', 'events', 'update_columns', 'url', 'headers', 'timeout_ms', 'enabled', 'rate_limit', 'ordering', 'max_in_flight', 'filter', 'columns', 'template', 'disabled_reason', 'disabled_at', 'disabled_failing_since', 'circuit'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    table: { type: 'string' },
    events: { type: 'array', items: { type: 'string' } },
    update_columns: { type: ['array', 'null'], items: { type: 'string' } },
    url: { type: 'string' },
    headers: { type: 'object', additionalProperties: { type: 'string' } },
    timeout_ms: { type: 'integer' },
    enabled: { type: 'boolean' },
    rate_limit: { type: ['integer', 'null'] },
    ordering: { type: 'string', enum: ['none', 'row'] },
    max_in_flight: { type: ['integer', 'null'] },
    filter: { type: ['object', 'null'], additionalProperties: true },
    columns: { type: ['array', 'null'], items: { type: 'string' } },
    template: { anyOf: [{ type: 'object', additionalProperties: true }, { type: 'array' }, { type: 'null' }] },
    disabled_reason: { type: ['string', 'null'], description: "'failing': the service disabled it after its endpoint failed for ENDPOINT_DISABLE_AFTER; null otherwise" },
    disabled_at: { type: ['string', 'null'], format: 'date-time' },
    disabled_failing_since: { type: ['string', 'null'], format: 'date-time', description: 'when disabled by the service: since when its endpoint had been failing' },
    circuit,
    replay_offer: {
      type: 'object',
      description: 'present while the service has it disabled, and in the answer that enables it again: the bulk replay (POST .../outbox/replay body) of what ended dead while it was disabled',
      required: ['deliveries', 'request'],
      properties: {
        deliveries: { type: 'integer' },
        request: {
          type: 'object',
          required: ['status', 'webhook_id', 'since'],
          properties: { status: { type: 'string', enum: ['dead'] }, webhook_id: { type: 'string' }, since: { type: 'string', format: 'date-time' } },
        },
      },
    },
    signature_scheme: { type: 'string', enum: ['v1', 'v1a'] },
    public_key: { type: ['string', 'null'], description: 'whpk_…: the ed25519 public key of a v1a webhook (null for v1)' },
    signing_secret_created_at: { type: ['string', 'null'], format: 'date-time' },
    previous_secret_expires_at: { type: ['string', 'null'], format: 'date-time' },
    created_at: timestamp,
    updated_at: timestamp,
  },
} as const;
const withSecret = { ...record, properties: { ...record.properties, signing_secret: { type: 'string', description: 'whsec_… of a v1 webhook, shown once' } } } as const;

const idParams = {
  type: 'object',
  additionalProperties: false,
  required: ['ref', 'id'],
  properties: { ref, id: uuid },
} as const;
const refOnly = { type: 'object', additionalProperties: false, required: ['ref'], properties: { ref } } as const;

interface Body {
  name?: string;
  table?: string;
  events?: WebhookEvent[];
  update_columns?: string[] | null;
  url?: string;
  headers?: Record<string, string>;
  timeout_ms?: number;
  enabled?: boolean;
  rate_limit?: number | null;
  ordering?: WebhookOrdering;
  max_in_flight?: number | null;
  filter?: RowFilter | null;
  columns?: string[] | null;
  template?: unknown;
  signature_scheme?: SignatureScheme;
  rotate_secret?: boolean;
}

/** The fields the webhook's triggers are made of: a change of one installs them again. */
const TRIGGER_FIELDS: readonly (keyof WebhookFields)[] = ['schema', 'table', 'events', 'enabled', 'update_columns', 'ordering', 'filter', 'columns'];
export const triggerSpec = (id: string, f: WebhookFields) => ({ id, schema: f.schema, table: f.table, events: f.events, updateColumns: f.update_columns, ordering: f.ordering, filter: f.filter, columns: f.columns });

const origin = (url: string) => new URL(url).origin;
// jsonb does not keep key order, so headers are compared with their keys sorted
const canonical = (v: unknown) => JSON.stringify(v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)) : v);

export function registerWebhooks(app: FastifyInstance, ctx: Ctx): void {
  /** The circuit of a webhook and, while the service has it disabled, what enabling it offers to replay. */
  async function extrasOf(w: WebhookRow, known?: CircuitView): Promise<EndpointExtras> {
    const circuit = known ?? (await endpointViews(ctx.db, w.project_ref, [`webhook:${w.id}`]))[0] ?? healthyCircuit(w.id);
    const offer = w.disabled_reason && w.disabled_at ? await replayOffer(ctx.db, w.project_ref, w.id, w.disabled_at) : null;
    return { circuit, ...(offer ? { replay_offer: offer } : {}) };
  }

  const allow = makeAllowList(ctx.cfg.OUTBOUND_ALLOW_CIDRS);
  const tag = { tags: ['webhooks'], ...owner };

  /** Validates the parts of a body a schema cannot, and checks a new table exists. */
  async function vet(refName: string, b: Body) {
    const url = b.url === undefined ? undefined : checkWebhookUrl(b.url, allow);
    const headers = b.headers === undefined ? undefined : checkHeaders(b.headers);
    const target = b.table === undefined ? undefined : parseTableName(b.table);
    // stored as jsonb and compiled into SQL text: a NUL or an unpaired surrogate is refused here,
    // enabled or not (it reached Postgres as a 500, or a NUL cut the statement short: a false 503)
    if (b.filter) assertStorableJson('body.filter', b.filter);
    if (b.template !== undefined && b.template !== null) assertStorableJson('body.template', b.template);
    if (target) {
      const found = await withProjectDb(ctx, refName, (c) => tableExists(c, target.schema, target.table));
      if (!found) throw new ApiError('table_not_found', `The table ${target.schema}.${target.table} does not exist in the project database.`);
    }
    return { url, headers, target };
  }

  /** The column filter of the webhook as it will be: UPDATE among its events, its columns in its table. */
  /** The row filter against the table as it will be, before any trigger is dropped or created. */
  async function vetFilter(refName: string, f: WebhookFields) {
    if (f.filter && f.enabled) await withProjectDb(ctx, refName, (c) => checkRowFilter(c, f.schema, f.table, f.filter!));
  }

  /** Payload shaping against the table as it will be: the columns exist, the template reads only columns a message carries. */
  async function vetShape(refName: string, f: WebhookFields) {
    if (!f.columns && (f.template === null || f.template === undefined)) return;
    const all = await withProjectDb(ctx, refName, (c) => tableColumns(c, f.schema, f.table));
    if (f.columns) {
      const missing = f.columns.filter((col) => !all.includes(col));
      if (missing.length) throw notColumns('columns', missing, f.schema, f.table);
    }
    if (f.template !== null && f.template !== undefined) checkTemplate(f.template, f.columns ?? all, f.columns ? `the webhook's columns (${f.columns.join(', ')})` : `${f.schema}.${f.table}`);
  }

  async function vetUpdateColumns(refName: string, f: WebhookFields, checkColumns: boolean) {
    checkUpdateColumnsEvents(f.events, f.update_columns);
    if (!f.update_columns || !checkColumns) return;
    const missing = await withProjectDb(ctx, refName, (c) => missingColumns(c, f.schema, f.table, f.update_columns!));
    if (missing.length) throw notColumns('update_columns', missing, f.schema, f.table);
  }

  app.post<{ Params: { ref: string }; Body: Body }>(
    '/v1/projects/:ref/webhooks',
    {
      config: { access: 'project-owner' },
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      schema: { ...tag, summary: 'Create a webhook (a v1 webhook\'s response carries signing_secret, once)', params: refOnly, querystring: noQuery, body: createBody, response: { 201: withSecret, ...errorResponses } },
    },
    async (req, reply) => {
      const refName = req.params.ref;
      const b = req.body;
      const v = await vet(refName, b);
      const id = randomUUID();
      const f: WebhookFields = {
        name: b.name ?? b.table!,
        schema: v.target!.schema,
        table: v.target!.table,
        events: b.events!,
        update_columns: b.update_columns ?? null,
        url: v.url!,
        headers: v.headers ?? {},
        timeout_ms: b.timeout_ms ?? ctx.cfg.WEBHOOK_TIMEOUT_DEFAULT_MS,
        enabled: b.enabled ?? true,
        rate_limit: b.rate_limit ?? null,
        // row by default wherever it can hold (a primary key): measured at -2.5 % throughput, +2.5 %
        // CPU per message (docs/delivery.md); explicit row without one is refused at install
        ordering: b.ordering ?? ((await withProjectDb(ctx, refName, (c) => primaryKeyColumns(c, v.target!.schema, v.target!.table))).length ? 'row' : 'none'),
        max_in_flight: b.max_in_flight ?? null,
        filter: b.filter ?? null,
        columns: b.columns ?? null,
        template: b.template ?? null,
      };
      await vetUpdateColumns(refName, f, true);
      await vetShape(refName, f);
      await vetFilter(refName, f);
      await ensureOutboxEnabled(ctx, refName);
      const secret = await withTransaction(ctx.db, async (c) => {
        await insertWebhook(c, refName, id, f);
        const s = await addSigningSecret(c, ctx.box, id, b.signature_scheme ?? 'v1');
        await recordAudit(c, req, refName, {
          action: 'webhook.create',
          resourceType: 'webhook',
          resourceId: id,
          details: { name: f.name, table: `${f.schema}.${f.table}`, events: f.events, update_columns: f.update_columns, url_origin: origin(f.url), header_names: Object.keys(f.headers), timeout_ms: f.timeout_ms, enabled: f.enabled, rate_limit: f.rate_limit, ordering: f.ordering, max_in_flight: f.max_in_flight, filter: f.filter, columns: f.columns, template: f.template !== null, signature_scheme: b.signature_scheme ?? 'v1' },
        });
        // Last, so a failure here rolls the webhook back; the trigger commits in its own database.
        if (f.enabled) await withProjectDb(ctx, refName, (pc) => installWebhookTrigger(pc, triggerSpec(id, f)));
        return s;
      });
      const row = await getWebhook(ctx.db, refName, id);
      return reply.code(201).send(secret ? { ...webhookRecord(row!), signing_secret: secret } : webhookRecord(row!));
    },
  );

  app.get<{ Params: { ref: string } }>(
    '/v1/projects/:ref/webhooks',
    { config: { access: 'project-owner' }, preValidation: refuseBody, schema: { ...tag, summary: "The project's webhooks (never their secrets)", params: refOnly, querystring: noQuery, response: { 200: { type: 'array', items: record }, ...errorResponses } } },
    async (req) => {
      const rows = await listWebhooks(ctx.db, req.params.ref);
      const circuits = new Map((await endpointViews(ctx.db, req.params.ref)).map((v) => [v.endpoint, v]));
      return Promise.all(rows.map(async (w) => webhookRecord(w, await extrasOf(w, circuits.get(`webhook:${w.id}`) ?? healthyCircuit(w.id)))));
    },
  );

  app.get<{ Params: { ref: string; id: string } }>(
    '/v1/projects/:ref/webhooks/:id',
    { config: { access: 'project-owner' }, preValidation: refuseBody, schema: { ...tag, summary: 'One webhook', params: idParams, querystring: noQuery, response: { 200: record, ...errorResponses } } },
    async (req) => {
      const w = await getWebhook(ctx.db, req.params.ref, req.params.id);
      if (!w) throw new ApiError('webhook_not_found');
      return webhookRecord(w, await extrasOf(w));
    },
  );

  app.patch<{ Params: { ref: string; id: string }; Body: Body }>(
    '/v1/projects/:ref/webhooks/:id',
    {
      config: { access: 'project-owner' },
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      schema: {
        ...tag,
        summary: 'Change a webhook; {"rotate_secret": true} (or a new signature_scheme) issues a new signing key, a v1 signing_secret returned once',
        params: idParams,
        querystring: noQuery,
        body: patchBody,
        response: { 200: withSecret, ...errorResponses },
      },
    },
    async (req) => {
      const { ref: refName, id } = req.params;
      const b = req.body;
      const v = await vet(refName, b);
      let reenabled: Date | null = null;
      const touchesTrigger = TRIGGER_FIELDS.some((k) => (b as Record<string, unknown>)[k === 'schema' ? 'table' : k] !== undefined);
      if (touchesTrigger) await ensureOutboxEnabled(ctx, refName);
      const secret = await withTransaction(ctx.db, async (c) => {
        const cur = await getWebhook(c, refName, id, true);
        if (!cur) throw new ApiError('webhook_not_found');
        const next: WebhookFields = {
          name: b.name ?? cur.name,
          schema: v.target?.schema ?? cur.schema_name,
          table: v.target?.table ?? cur.table_name,
          events: b.events ?? cur.events,
          update_columns: b.update_columns !== undefined ? b.update_columns : cur.update_columns,
          url: v.url ?? cur.url,
          headers: v.headers ?? cur.headers,
          timeout_ms: b.timeout_ms ?? cur.timeout_ms,
          enabled: b.enabled ?? cur.enabled,
          rate_limit: b.rate_limit !== undefined ? b.rate_limit : cur.rate_limit,
          ordering: b.ordering ?? cur.ordering,
          max_in_flight: b.max_in_flight !== undefined ? b.max_in_flight : cur.max_in_flight,
          filter: b.filter !== undefined ? b.filter : cur.filter,
          columns: b.columns !== undefined ? b.columns : cur.columns,
          template: b.template !== undefined ? b.template : cur.template,
        };
        const before: WebhookFields = { ...cur, schema: cur.schema_name, table: cur.table_name };
        const changed = (Object.keys(next) as (keyof WebhookFields)[]).filter((k) => canonical(next[k]) !== canonical(before[k]));
        await vetUpdateColumns(refName, next, changed.some((k) => k === 'schema' || k === 'table' || k === 'update_columns'));
        // the trigger is installed again below: its filter must still fit the table
        if (changed.some((k) => k === 'schema' || k === 'table' || k === 'events' || k === 'enabled' || k === 'update_columns' || k === 'ordering' || k === 'filter')) await vetFilter(refName, next);
        if (changed.some((k) => k === 'schema' || k === 'table' || k === 'columns' || k === 'template')) await vetShape(refName, next);
        reenabled = cur.disabled_reason && next.enabled ? cur.disabled_at : null;
        if (changed.length) {
          await updateWebhook(c, refName, id, next);
          // a new URL, or the owner enabling it: the endpoint's failures so far no longer speak for it
          if (changed.some((k) => k === 'url' || k === 'enabled')) await resetWebhookCircuit(c, refName, id);
          await recordAudit(c, req, refName, { action: 'webhook.update', resourceType: 'webhook', resourceId: id, details: { fields: changed } });
        }
        // A new key: asked for, or implied by a change of scheme (the outgoing key keeps signing
        // beside it for the grace period, so receivers can move from v1 to v1a without a gap).
        const scheme = b.signature_scheme ?? cur.signature_scheme ?? 'v1';
        const rotate = b.rotate_secret === true || scheme !== (cur.signature_scheme ?? 'v1');
        const s = rotate ? await rotateSigningSecret(c, ctx.box, id, ctx.cfg.SIGNING_SECRET_GRACE, scheme) : undefined;
        if (rotate) {
          await recordAudit(c, req, refName, { action: 'webhook.rotate_secret', resourceType: 'webhook', resourceId: id, details: { grace_ms: ctx.cfg.SIGNING_SECRET_GRACE, signature_scheme: scheme } });
        }
        if (changed.some((k) => TRIGGER_FIELDS.includes(k))) {
          await withProjectDb(ctx, refName, async (pc) => {
            await dropWebhookTrigger(pc, { id, schema: cur.schema_name, table: cur.table_name });
            if (next.enabled) await installWebhookTrigger(pc, triggerSpec(id, next));
          });
        }
        return s;
      });
      const w = (await getWebhook(ctx.db, refName, id))!;
      const offer = reenabled ? await replayOffer(ctx.db, refName, id, reenabled) : null;
      const row = webhookRecord(w, { ...(await extrasOf(w)), ...(offer ? { replay_offer: offer } : {}) });
      return secret ? { ...row, signing_secret: secret } : row;
    },
  );

  app.delete<{ Params: { ref: string; id: string } }>(
    '/v1/projects/:ref/webhooks/:id',
    { config: { access: 'project-owner' }, preValidation: refuseBody, schema: { ...tag, summary: 'Delete a webhook and its trigger', params: idParams, querystring: noQuery, response: { 204: { type: 'null', description: 'deleted' }, ...errorResponses } } },
    async (req, reply) => {
      const { ref: refName, id } = req.params;
      await withTransaction(ctx.db, async (c) => {
        const w = await deleteWebhook(c, refName, id);
        if (!w) throw new ApiError('webhook_not_found');
        await recordAudit(c, req, refName, { action: 'webhook.delete', resourceType: 'webhook', resourceId: id, details: { name: w.name, table: `${w.schema_name}.${w.table_name}` } });
        await withProjectDb(ctx, refName, (pc) => dropWebhookTrigger(pc, { id, schema: w.schema_name, table: w.table_name })).catch((err) => {
          // An unreachable project database must not keep a webhook alive: messages its leftover
          // trigger enqueues name a deleted webhook, and the dispatcher marks those dead unsent.
          if ((err as ApiError).code !== 'service_unavailable') throw err;
          ctx.log.warn({ project: refName, webhook: id }, 'webhook deleted; its trigger could not be dropped yet');
        });
      });
      return reply.code(204).send();
    },
  );
}
