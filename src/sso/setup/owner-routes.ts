// The owner's side of SSO setup links (docs/sso.md, "Setup links"), on the Management API:
//   POST   /v1/projects/{ref}/auth/sso/setup-links        make a link (its URL is in this answer only)
//   GET    /v1/projects/{ref}/auth/sso/setup-links        list them, without any secret
//   DELETE /v1/projects/{ref}/auth/sso/setup-links/{id}   revoke one (its unactivated draft goes too)
// Owner only, on a plan with sso, like the rest of SSO management. Each change is an audit entry.
import type { FastifyInstance } from 'fastify';
import { withTransaction } from '../../db/index.js';
import { ApiError } from '../../errors.js';
import { errorSchema, guardedProject, noQuery, refParams, TEXT } from '../../http/index.js';
import { recordAudit } from '../../projects/index.js';
import { normalizeDomains } from '../providers/save.js';
import { deleteProvider, getProvider, takenDomain } from '../providers/store.js';
import { takeoverWarnings, takeoverWarningSchema } from '../providers/takeover.js';
import type { SsoContext } from '../types.js';
import { insertLink, linkById, listLinks, presentLink, revokeLink, setupUrl, type LinkKind } from './links.js';

const DAY = 86_400_000;

const createBody = {
  type: 'object',
  additionalProperties: false,
  required: ['domains'],
  properties: {
    domains: { type: 'array', minItems: 1, maxItems: 50, items: { type: 'string', minLength: 1, maxLength: 253, pattern: TEXT }, description: 'the email domains the provider will serve' },
    kind: { type: 'string', enum: ['saml', 'oidc', 'any'], default: 'any', description: 'which kind of provider the admin may set up' },
    expires_in_days: { type: 'integer', minimum: 1, maximum: 30, default: 7 },
  },
} as const;

const linkSchema = {
  type: 'object',
  required: ['id', 'kind', 'domains', 'state', 'provider_id', 'created_at', 'expires_at', 'revoked_at', 'activated_at', 'used_at'],
  properties: {
    id: { type: 'string' },
    kind: { type: 'string', enum: ['saml', 'oidc', 'any'] },
    domains: { type: 'array', items: { type: 'string' } },
    state: { type: 'string', enum: ['active', 'expired', 'revoked', 'used'] },
    provider_id: { type: 'string', description: 'the id the provider will have (its SAML entity ID and ACS URL carry it)' },
    created_at: { type: 'string', format: 'date-time' },
    expires_at: { type: 'string', format: 'date-time' },
    revoked_at: { type: ['string', 'null'], format: 'date-time' },
    activated_at: { type: ['string', 'null'], format: 'date-time', description: 'when the link holder activated the provider' },
    used_at: { type: ['string', 'null'], format: 'date-time', description: "when the link's provider went live, by the link or by the owner; a link works once, whatever happens to the provider later" },
  },
} as const;

// url second, where the answer puts it (fast-json-stringify writes the fields in this order)
const { id: linkId, ...linkFields } = linkSchema.properties;
const createdSchema = {
  type: 'object',
  required: [...linkSchema.required, 'url', 'warnings'],
  properties: {
    id: linkId,
    url: { type: 'string', description: 'the link to hand to the IdP admin (the secret is in its fragment); only in this answer' },
    ...linkFields,
    warnings: {
      type: 'array',
      description: "only in the answer to POST: live providers whose users of a subdomain would move to the link's provider once it is activated",
      items: takeoverWarningSchema,
    },
  },
} as const;

const idParams = { type: 'object', required: ['ref', 'id'], properties: { ...refParams.properties, id: { type: 'string', maxLength: 64 } } } as const;

export async function registerSetupLinkOwnerRoutes(app: FastifyInstance, ctx: SsoContext): Promise<void> {
  const base = '/v1/projects/:ref/auth/sso/setup-links';
  const common = { tags: ['sso'], security: [{ ownerToken: [] }], querystring: noQuery };
  const errors = { 400: errorSchema, 401: errorSchema, 402: errorSchema, 404: errorSchema };

  app.post<{ Params: { ref: string }; Body: { domains: string[]; kind: LinkKind; expires_in_days: number } }>(
    base,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: "Make an SSO setup link for a customer's IT admin (shown once)", params: refParams, body: createBody, response: { 201: createdSchema, 409: errorSchema, ...errors } } },
    async (req, reply) => {
      const project = guardedProject(req);
      const domains = normalizeDomains(req.body.domains);
      // Said now rather than when the admin saves: a domain another provider serves cannot be set up.
      const taken = await takenDomain(ctx.db, project.ref, domains);
      if (taken) throw new ApiError('sso_domain_taken', `The domain ${taken} is already bound to a provider of this project.`);
      const warnings = await takeoverWarnings(ctx.db, project.ref, domains, { moment: 'link' });
      const { id, secret } = await withTransaction(ctx.db, async (c) => {
        const made = await insertLink(c, project.ref, { kind: req.body.kind, domains, ttlMs: req.body.expires_in_days * DAY, tokenId: req.ownerTokenId ?? null });
        await recordAudit(c, req, project.ref, {
          action: 'sso_setup_link.create',
          resourceType: 'sso_setup_link',
          resourceId: made.id,
          details: { setup_link_id: made.id, kind: req.body.kind, domains, expires_in_days: req.body.expires_in_days, ...(warnings.length ? { takes_over_from: warnings.map((w) => w.provider_id) } : {}) },
        });
        return made;
      });
      req.log.info({ project: project.ref, setup_link: id }, 'sso setup link created');
      const link = (await linkById(ctx.db, project.ref, id))!;
      return reply.code(201).send({ id, url: setupUrl(ctx, secret), ...presentLink(link), warnings });
    },
  );

  app.get<{ Params: { ref: string } }>(
    base,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: "The project's SSO setup links (never their secret)", params: refParams, response: { 200: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: linkSchema } } }, ...errors } } },
    async (req) => ({ items: (await listLinks(ctx.db, guardedProject(req).ref)).map(presentLink) }),
  );

  app.delete<{ Params: { ref: string; id: string } }>(
    `${base}/:id`,
    { config: { access: 'project-owner', feature: 'sso' }, schema: { ...common, summary: 'Revoke an SSO setup link (a provider it set up but did not activate is deleted)', params: idParams, response: { 200: linkSchema, ...errors } } },
    async (req) => {
      const project = guardedProject(req);
      const link = await linkById(ctx.db, project.ref, req.params.id);
      if (!link) throw new ApiError('sso_setup_link_not_found');
      await withTransaction(ctx.db, async (c) => {
        if (!(await revokeLink(c, link.id))) return; // already revoked: nothing more to do or record
        // a draft nobody activated would otherwise keep holding the link's domains
        const draft = await getProvider(c, project.ref, link.provider_id);
        const draftDeleted = !!draft?.draft && (await deleteProvider(c, project.ref, draft.id));
        await recordAudit(c, req, project.ref, {
          action: 'sso_setup_link.revoke',
          resourceType: 'sso_setup_link',
          resourceId: link.id,
          details: { setup_link_id: link.id, state_before: link.state, draft_provider_deleted: draftDeleted },
        });
      });
      req.log.info({ project: project.ref, setup_link: link.id }, 'sso setup link revoked');
      return presentLink((await linkById(ctx.db, project.ref, link.id))!);
    },
  );
}
