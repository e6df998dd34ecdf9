// Management of SSO providers: /v1/projects/{ref}/auth/providers/sso[/{id}] and
// /v1/projects/{ref}/auth/providers/{id}/test. Owner only; the project's plan must include sso.
// Every change is one audit entry, written in the change's transaction (see audit.ts).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withTransaction } from '../../db/index.js';
import { recordAudit } from '../../projects/index.js';
import { errorSchema, guardedProject, MULTILINE_TEXT, noQuery, refParams, TEXT } from '../../http/index.js';
import { attributeMappingSchema } from '../sign-in/attribute-mapping.js';
import { providerDeleted } from './audit.js';
import { kindOf } from './kinds.js';
import { changeProvider, createProvider, mustGet, type AuditWriter } from './save.js';
import { deleteProvider, listProviders } from './store.js';
import type { TakeoverWarning } from './takeover.js';
import type { ProviderInput, ProviderRow, SsoContext } from '../types.js';

export const providerFields = {
  name: { type: 'string', minLength: 1, maxLength: 200, pattern: TEXT },
  enabled: { type: 'boolean' },
  domains: { type: 'array', minItems: 1, maxItems: 50, items: { type: 'string', minLength: 1, maxLength: 253, pattern: TEXT } },
  issuer: { type: 'string', minLength: 1, maxLength: 2048, pattern: TEXT },
  client_id: { type: 'string', minLength: 1, maxLength: 512, pattern: TEXT },
  client_secret: { type: 'string', minLength: 1, maxLength: 4096, pattern: TEXT },
  scopes: { type: 'array', maxItems: 50, items: { type: 'string', pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]{1,128}$' } },
  metadata_url: { type: 'string', minLength: 1, maxLength: 2048, pattern: TEXT },
  metadata_xml: { type: 'string', minLength: 1, maxLength: 512_000, pattern: MULTILINE_TEXT },
  attribute_mapping: attributeMappingSchema,
  trust_email: { type: 'boolean' },
  jit: { type: 'boolean' },
} as const;

const createBody = {
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'name', 'domains'],
  properties: { kind: { type: 'string', enum: ['oidc', 'saml'] }, ...providerFields },
} as const;

const patchBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    ...providerFields,
    refresh_metadata: { type: 'boolean' },
    callback: {
      type: 'string',
      enum: ['own'],
      description:
        "OIDC: move a provider made before 2026-11-29 from the project's shared redirect URI to one of its own (callback_url in the answer): register that URI at the IdP first. The shared URI is refused for it from then on",
    },
  },
} as const;

// The answers to POST and PATCH add, last and only when the write moved someone, `warnings`:
// [{code: "takes_over_subdomain", domain, provider_id, provider_name, provider_domain, message}],
// the users of a subdomain another live provider served who sign in through this one from now on
// (providers/takeover.ts). Not declared below, so the provider's own fields keep their order.
const providerResponse = {
  type: 'object',
  additionalProperties: true,
  required: ['id', 'kind', 'name', 'enabled', 'draft', 'domains'],
  properties: {
    id: { type: 'string' },
    kind: { type: 'string', enum: ['oidc', 'saml'] },
    name: { type: 'string' },
    enabled: { type: 'boolean' },
    draft: { type: 'boolean', description: 'made through a setup link and not activated yet: disabled, never routed to' },
    domains: { type: 'array', items: { type: 'string' } },
  },
} as const;

const idParams = { type: 'object', required: ['ref', 'id'], properties: { ...refParams.properties, id: { type: 'string', maxLength: 64 } } } as const;

export function presentProvider(ctx: SsoContext, p: ProviderRow): Record<string, unknown> {
  const { callback_url, ...kindFields } = kindOf(p.kind).present(ctx, p);
  return {
    id: p.id,
    kind: p.kind,
    name: p.name,
    enabled: p.enabled,
    draft: p.draft,
    domains: p.domains,
    ...kindFields,
    attribute_mapping: p.attribute_mapping,
    trust_email: p.trust_email,
    jit: p.jit,
    ...(callback_url !== undefined ? { callback_url } : {}),
    created_at: p.created_at,
    updated_at: p.updated_at,
  };
}

/** `warnings` in an answer only when the write moved users from another provider (see providerResponse). */
const moved = (warnings: TakeoverWarning[]) => (warnings.length ? { warnings } : {});

/** The owner's changes are recorded with the request's owner and token. */
const ownerAudit = (req: FastifyRequest, ref: string): AuditWriter => (c, e) => recordAudit(c, req, ref, e);

export async function registerProviderRoutes(app: FastifyInstance, ctx: SsoContext): Promise<void> {
  const base = '/v1/projects/:ref/auth/providers';
  // no query parameters unless a route declares its own (the users list does)
  const common = { tags: ['sso'], security: [{ ownerToken: [] }] , querystring: noQuery };
  const errors = { 400: errorSchema, 401: errorSchema, 402: errorSchema, 404: errorSchema };

  app.post<{ Params: { ref: string }; Body: ProviderInput & { kind: ProviderRow['kind']; name: string; domains: string[] } }>(
    `${base}/sso`,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: 'Create an SSO provider', params: refParams, body: createBody, response: { 201: providerResponse, 409: errorSchema, ...errors } } },
    async (req, reply) => {
      const project = guardedProject(req);
      const id = randomUUID();
      const { provider: created, warnings } = await createProvider(ctx, project.ref, id, req.body, ownerAudit(req, project.ref));
      req.log.info({ project: project.ref, provider: id, kind: req.body.kind }, 'sso provider created');
      return reply.code(201).send({ ...presentProvider(ctx, created), ...moved(warnings) });
    },
  );

  app.get<{ Params: { ref: string } }>(
    `${base}/sso`,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: "The project's SSO providers", params: refParams } },
    async (req) => {
      const project = guardedProject(req);
      return { items: (await listProviders(ctx.db, project.ref)).map((p) => presentProvider(ctx, p)) };
    },
  );

  app.get<{ Params: { ref: string; id: string } }>(
    `${base}/sso/:id`,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: 'One SSO provider', params: idParams, response: { 200: providerResponse, ...errors } } },
    async (req) => {
      const project = guardedProject(req);
      return presentProvider(ctx, await mustGet(ctx, project.ref, req.params.id));
    },
  );

  app.patch<{ Params: { ref: string; id: string }; Body: ProviderInput }>(
    `${base}/sso/:id`,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: 'Change an SSO provider (enable/disable, fields, refresh_metadata)', params: idParams, body: patchBody, response: { 200: providerResponse, 409: errorSchema, ...errors } } },
    async (req) => {
      const project = guardedProject(req);
      const existing = await mustGet(ctx, project.ref, req.params.id);
      const { provider: changed, warnings } = await changeProvider(ctx, project.ref, existing, req.body, ownerAudit(req, project.ref));
      req.log.info({ project: project.ref, provider: existing.id }, 'sso provider updated');
      return { ...presentProvider(ctx, changed), ...moved(warnings) };
    },
  );

  app.delete<{ Params: { ref: string; id: string } }>(
    `${base}/sso/:id`,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: 'Delete an SSO provider (its identities go with it; users stay)', params: idParams, response: { 200: providerResponse, ...errors } } },
    async (req) => {
      const project = guardedProject(req);
      const existing = await mustGet(ctx, project.ref, req.params.id);
      await withTransaction(ctx.db, async (c) => {
        // a concurrent delete got there first: nothing to record
        const ended = await deleteProvider(c, project.ref, existing.id);
        if (ended) {
          const event = providerDeleted(existing);
          await recordAudit(c, req, project.ref, { ...event, details: { ...event.details, ...ended } });
        }
      });
      req.log.info({ project: project.ref, provider: existing.id }, 'sso provider deleted');
      return presentProvider(ctx, existing);
    },
  );

  app.post<{ Params: { ref: string; id: string } }>(
    `${base}/:id/test`,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: 'Re-run OIDC discovery or the SAML metadata download; changes nothing', params: idParams } },
    async (req) => {
      const project = guardedProject(req);
      const p = await mustGet(ctx, project.ref, req.params.id);
      return kindOf(p.kind).test(ctx, p);
    },
  );
}
