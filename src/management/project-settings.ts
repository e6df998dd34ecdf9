// One project as its owner sees it (GET /v1/projects/{ref}), its auth settings (PATCH), the
// on-demand outbox switch (POST /v1/projects/{ref}/outbox/enable) and the state of its capture
// (GET /v1/projects/{ref}/outbox: connector, supervisor restarts, replication slot).
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { withTransaction } from '../db/index.js';
import { ApiError } from '../errors.js';
import { ensureOutboxEnabled } from '../outbox/index.js';
import { projectUrl, recordAudit } from '../projects/index.js';
import { loadProjectRow, type ProjectRow, MANAGEMENT_BODY_LIMIT, errorResponses, iso, noQuery, owner, refParams, refuseBody, TEXT, timestamp } from '../http/index.js';
import { captureState, outboxEnabledAt, updateAuthSettings, type AuthSettingsChange } from './project-store.js';

type Ctx = Pick<AppContext, 'db' | 'cfg' | 'log' | 'projectDbs' | 'connect' | 'topics'>;

const URL_MAX = 2048;
const MAX_REDIRECT_URLS = 100;

const authSettings = {
  type: 'object',
  required: ['site_url', 'additional_redirect_urls', 'disable_signup', 'allow_linking'],
  properties: {
    site_url: { type: 'string' },
    additional_redirect_urls: { type: 'array', items: { type: 'string' } },
    disable_signup: { type: 'boolean' },
    allow_linking: { type: 'boolean' },
  },
} as const;

const projectView = {
  type: 'object',
  required: ['ref', 'plan', 'features', 'anon_key', 'project_url', 'outbox_enabled', 'outbox_enabled_at', 'auth', 'created_at'],
  properties: {
    ref: { type: 'string' },
    plan: { type: 'string' },
    features: { type: 'array', items: { type: 'string' } },
    anon_key: { type: 'string' },
    project_url: { type: 'string' },
    outbox_enabled: { type: 'boolean' },
    outbox_enabled_at: { type: ['string', 'null'], format: 'date-time' },
    auth: authSettings,
    created_at: timestamp,
  },
} as const;

const patchBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    site_url: { type: 'string', minLength: 1, maxLength: URL_MAX, pattern: TEXT, description: 'absolute http(s) URL; the default redirect after sign-in' },
    additional_redirect_urls: {
      type: 'array',
      maxItems: MAX_REDIRECT_URLS,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: URL_MAX, pattern: TEXT },
      description: 'absolute http(s) URLs that redirectTo may name besides site_url; replaces the list',
    },
    disable_signup: { type: 'boolean' },
    allow_linking: { type: 'boolean', description: 'link an SSO identity to an existing user with the same verified email' },
  },
} as const;

type Patch = AuthSettingsChange;

export function viewProject(ctx: Pick<AppContext, 'cfg'>, p: ProjectRow) {
  return {
    ref: p.ref,
    plan: p.plan,
    features: p.features,
    anon_key: p.anon_key,
    project_url: projectUrl(ctx, p.ref),
    outbox_enabled: !!p.outbox_enabled_at,
    outbox_enabled_at: iso(p.outbox_enabled_at),
    auth: { site_url: p.site_url, additional_redirect_urls: p.additional_redirect_urls, disable_signup: p.disable_signup, allow_linking: p.allow_linking },
    created_at: iso(p.created_at),
  };
}

/** An absolute http(s) URL without credentials, in its normalised spelling. */
export function checkRedirectUrl(field: string, input: string): string {
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    throw new ApiError('invalid_url', `${field} is not an absolute URL.`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ApiError('invalid_url', `${field} must use http or https.`);
  if (u.username || u.password) throw new ApiError('invalid_url', `${field} must not carry credentials.`);
  return u.href;
}

export function registerProjectSettings(app: FastifyInstance, ctx: Ctx): void {
  const tag = { tags: ['projects'], ...owner };

  app.get<{ Params: { ref: string } }>(
    '/v1/projects/:ref',
    { config: { access: 'project-owner' }, preValidation: refuseBody, schema: { ...tag, summary: 'One project', params: refParams, querystring: noQuery, response: { 200: projectView, ...errorResponses } } },
    async (req) => viewProject(ctx, req.project!),
  );

  app.patch<{ Params: { ref: string }; Body: Patch }>(
    '/v1/projects/:ref',
    {
      config: { access: 'project-owner' },
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      schema: { ...tag, summary: 'Change auth settings: site_url, additional_redirect_urls, disable_signup, allow_linking', params: refParams, querystring: noQuery, body: patchBody, response: { 200: projectView, ...errorResponses } },
    },
    async (req) => {
      const b = req.body;
      const site = b.site_url === undefined ? undefined : checkRedirectUrl('site_url', b.site_url);
      const redirects = b.additional_redirect_urls?.map((u, i) => checkRedirectUrl(`additional_redirect_urls.${i}`, u));
      await withTransaction(ctx.db, async (c) => {
        await updateAuthSettings(c, req.params.ref, { site_url: site, additional_redirect_urls: redirects, disable_signup: b.disable_signup, allow_linking: b.allow_linking });
        const changes = { ...b, ...(site && { site_url: site }), ...(redirects && { additional_redirect_urls: redirects }) };
        await recordAudit(c, req, req.params.ref, { action: 'project.update', resourceType: 'project', resourceId: req.params.ref, details: { fields: Object.keys(b), changes } });
      });
      // the guard checked the owner; this reads the row again to show the change
      const row = await loadProjectRow(ctx, req.params.ref);
      if (!row) throw new ApiError('project_not_found');
      return viewProject(ctx, row);
    },
  );

  const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
  const nullableNumber = { type: ['number', 'null'] } as const;
  app.get<{ Params: { ref: string } }>(
    '/v1/projects/:ref/outbox',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: {
        tags: ['outbox'],
        ...owner,
        summary: "The state of the project's capture: its connector as Kafka Connect reports it, the supervisor's restarts, and its replication slot",
        params: refParams,
        querystring: noQuery,
        response: {
          200: {
            type: 'object',
            required: ['outbox_enabled', 'connector', 'slot'],
            properties: {
              outbox_enabled: { type: 'boolean' },
              connector: {
                type: ['object', 'null'],
                required: ['name', 'state', 'tasks', 'supervised_state', 'restarts', 'total_restarts', 'last_restart_at', 'next_restart_at', 'last_failure', 'checked_at'],
                properties: {
                  name: { type: 'string' },
                  state: { type: 'string', description: 'as Kafka Connect reports it: RUNNING, FAILED, PAUSED, UNASSIGNED, RESTARTING, NOT_REGISTERED or UNKNOWN (Connect unreachable)' },
                  tasks: { type: 'array', items: { type: 'object', required: ['id', 'state'], properties: { id: { type: 'integer' }, state: { type: 'string' } } } },
                  supervised_state: { type: ['string', 'null'], description: 'running, idle (stopped on purpose: no message for CAPTURE_IDLE_AFTER; resumes at the next write), restarting, failing, waiting_for_database or missing (null: not checked yet)' },
                  restarts: { type: 'integer', description: 'restarts in a row (drives the backoff)' },
                  total_restarts: { type: 'integer' },
                  last_restart_at: nullableTime,
                  next_restart_at: nullableTime,
                  last_failure: { type: ['string', 'null'] },
                  checked_at: nullableTime,
                },
              },
              slot: {
                type: ['object', 'null'],
                required: ['retained_wal_bytes', 'pending_bytes', 'wal_status', 'safe_wal_bytes', 'capture_lag_seconds'],
                properties: {
                  retained_wal_bytes: nullableNumber,
                  pending_bytes: nullableNumber,
                  wal_status: { type: ['string', 'null'] },
                  safe_wal_bytes: nullableNumber,
                  capture_lag_seconds: nullableNumber,
                },
              },
            },
          },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      const p = req.project!;
      if (!p.outbox_enabled_at) return { outbox_enabled: false, connector: null, slot: null };
      const r = (await captureState(ctx.db, p.ref))!;
      const live = r.connector_name ? await ctx.connect.status(r.connector_name).catch(() => 'unknown' as const) : null;
      const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
      return {
        outbox_enabled: true,
        connector: {
          name: r.connector_name,
          state: live === 'unknown' ? 'UNKNOWN' : live ? live.connector : 'NOT_REGISTERED',
          tasks: live && live !== 'unknown' ? live.tasks.map((t, id) => ({ id, state: t.state })) : [],
          supervised_state: r.state ?? null,
          restarts: r.restarts ?? 0,
          total_restarts: r.total_restarts ?? 0,
          last_restart_at: iso(r.last_restart_at ?? null),
          next_restart_at: iso(r.next_restart_at ?? null),
          last_failure: r.last_failure ?? null,
          checked_at: iso(r.checked_at ?? null),
        },
        slot: r.checked_at
          ? { retained_wal_bytes: num(r.slot_retained_bytes), pending_bytes: num(r.slot_pending_bytes), wal_status: r.slot_wal_status ?? null, safe_wal_bytes: num(r.slot_safe_wal_bytes), capture_lag_seconds: num(r.capture_lag_seconds) }
          : null,
      };
    },
  );

  app.post<{ Params: { ref: string } }>(
    '/v1/projects/:ref/outbox/enable',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: {
        tags: ['outbox'],
        ...owner,
        summary: "Enable the project's outbox now (it is enabled anyway by the first webhook or SMTP settings)",
        params: refParams,
        querystring: noQuery,
        response: { 200: { type: 'object', properties: { outbox_enabled: { type: 'boolean' }, outbox_enabled_at: timestamp } }, ...errorResponses },
      },
    },
    async (req) => {
      const ref = req.params.ref;
      const was = req.project!.outbox_enabled_at;
      await ensureOutboxEnabled(ctx, ref);
      const enabledAt = await outboxEnabledAt(ctx.db, ref);
      if (!was) await recordAudit(ctx.db, req, ref, { action: 'outbox.enable', resourceType: 'outbox', resourceId: ref });
      return { outbox_enabled: true, outbox_enabled_at: iso(enabledAt) };
    },
  );
}
