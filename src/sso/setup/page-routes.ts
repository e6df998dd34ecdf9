// The API behind the SSO setup page (web/src/setup/), for whoever holds a setup link: the
// customer's IT admin, who never gets the owner token. The link's secret is the credential, sent
// as `Authorization: Bearer ssl_...` (never a cookie or a URL), so another site cannot make a
// browser send it: the page's forms need no separate CSRF token, and bodies are JSON only.
//   GET  /v1/sso-setup               what to enter at the IdP, the draft provider, the last test
//   PUT  /v1/sso-setup/provider      save the IdP side (creates or changes the link's draft)
//   POST /v1/sso-setup/test          start a test sign-in: the URL the browser goes to
//   GET  /v1/sso-setup/tests/{id}    what a test sign-in found
//   POST /v1/sso-setup/activate      turn the draft on (after a passing test of its current settings)
// Nothing here takes a project ref, a provider id or a domain: all of it comes from the link, so
// the page cannot reach any other provider or domain of the project.
import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify';
import { withTransaction } from '../../db/index.js';
import { notifyOwner } from '../../email/index.js';
import { ApiError } from '../../errors.js';
import { errorSchema, MULTILINE_TEXT, TEXT } from '../../http/index.js';
import { recordSetupLinkAudit, type AuditEvent } from '../../projects/index.js';
import { limited } from '../auth-routes.js';
import { loadAuthProject } from '../auth-project.js';
import { DEFAULT_SCOPES, oidcCallbackUrl } from '../oidc/settings.js';
import { providerFields, presentProvider } from '../providers/routes.js';
import { kindOf } from '../providers/kinds.js';
import { providerUpdated } from '../providers/audit.js';
import { changeProvider, createProvider, mustGet, type AuditWriter, type WriteGuard } from '../providers/save.js';
import { activateDraft, deleteProvider, getProvider, lockProviderState } from '../providers/store.js';
import { takeoverWarnings, type TakeoverWarning } from '../providers/takeover.js';
import { EMAIL_NAMEID_FORMAT } from '../saml/core/index.js';
import { acsUrl, spMetadataUrl } from '../saml/settings.js';
import { insertFlow, newFlowId } from '../sign-in/flows.js';
import type { AuthProject, ProviderInput, ProviderRow, SsoContext } from '../types.js';
import { withoutNetworkDetail } from '../idp-fetch.js';
import { linkBySecret, lockLink, markActivated, setupPageUrl, type LinkRow } from './links.js';
import { forHolder, getTest, latestTest, testCovers, testIsCurrent } from './test-flow.js';

const GONE: Record<string, string> = {
  expired: 'This setup link has expired. Ask the owner of the service for a new one.',
  revoked: 'This setup link was revoked by the owner of the service. Ask them for a new one if you still need it.',
  used: 'This setup link was already used: the provider it set up was activated, and a link works only once. Ask the owner of the service for a new link to change it.',
};

declare module 'fastify' {
  interface FastifyRequest {
    /** the link of a 'setup-link' route and its project, loaded by its guard (src/http/access.ts) */
    setupLink?: { link: LinkRow; project: AuthProject };
  }
}

/**
 * The guard of every 'setup-link' route: the link named by the bearer secret, usable now; else 404
 * (unknown) or 410 (expired, revoked, used). Runs before the body is parsed.
 */
export const setupLinkVerifier =
  (ctx: SsoContext) =>
  async (req: FastifyRequest): Promise<void> => {
    req.setupLink = await requireLink(ctx, req);
  };

/** The link the 'setup-link' guard loaded for this request. */
function setupLinkOf(req: FastifyRequest): { link: LinkRow; project: AuthProject } {
  if (!req.setupLink) throw new Error("the 'setup-link' guard did not run for this route");
  return req.setupLink;
}

async function requireLink(ctx: SsoContext, req: FastifyRequest): Promise<{ link: LinkRow; project: AuthProject }> {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer\s+(\S{1,128})$/i.exec(h.trim()) : null;
  const link = m ? await linkBySecret(ctx.db, m[1]) : null;
  if (!link) throw new ApiError('sso_setup_link_not_found', 'This setup link is not valid. Check that you opened the whole link you were sent.');
  if (link.state !== 'active') throw new ApiError('sso_setup_link_gone', GONE[link.state], { state: link.state });
  const project = await loadAuthProject(ctx, link.project_ref);
  if (!project) throw new ApiError('sso_setup_link_not_found');
  if (!project.features.includes('sso')) throw new ApiError('feature_not_in_plan', "The project's plan no longer includes SSO; ask the owner of the service.");
  return { link, project };
}

const gone = (state: LinkRow['state']) => new ApiError('sso_setup_link_gone', GONE[state], { state });

/**
 * The guard of every write through a link, first in the write's transaction (after the slow
 * discovery or metadata download): the link's row and its provider's are locked, so a revocation,
 * an activation or an owner's change in flight is waited for (or waits for this write); then the
 * link must still be active and its provider still what the request saw: none yet, or a draft of
 * kind `expected`.
 */
const stillUsable =
  (link: LinkRow, expected: ProviderRow['kind'] | null): WriteGuard =>
  async (c) => {
    const now = await lockLink(c, link.id);
    if (!now) throw new ApiError('sso_setup_link_not_found');
    if (now.state !== 'active') throw gone(now.state);
    const p = await lockProviderState(c, link.provider_id);
    // A live provider has used its link up (migration 101), so the check above already said 410;
    // this only keeps a link from ever writing to a provider that is not its draft.
    if (p && (!p.draft || p.enabled)) throw new ApiError('sso_setup_conflict');
    if ((p?.kind ?? null) !== expected) throw new ApiError('sso_setup_conflict');
  };

const linkAudit = (req: FastifyRequest, link: LinkRow): AuditWriter => (c, e) => recordSetupLinkAudit(c, link.id, req.id, link.project_ref, e);

/** The link's draft, or null before the first save (the id is reserved by the link). */
async function draftOf(ctx: SsoContext, link: LinkRow): Promise<ProviderRow | null> {
  return getProvider(ctx.db, link.project_ref, link.provider_id);
}

/** What the admin enters at the IdP, for the kinds the link allows. */
function spSide(ctx: SsoContext, link: LinkRow, provider: ProviderRow | null) {
  const m = provider?.attribute_mapping ?? {};
  const saml = {
    sp_entity_id: spMetadataUrl(ctx, link.project_ref, link.provider_id),
    acs_url: acsUrl(ctx, link.project_ref, link.provider_id),
    sp_metadata_url: spMetadataUrl(ctx, link.project_ref, link.provider_id),
    nameid_format: EMAIL_NAMEID_FORMAT,
    attributes: [
      { field: 'email', attribute: m.email ?? 'email', note: 'else the NameID' },
      { field: 'first_name', attribute: m.first_name ?? 'givenName' },
      { field: 'last_name', attribute: m.last_name ?? 'surname' },
      { field: 'name', attribute: m.name ?? 'displayName' },
      ...Object.entries(m.extra ?? {}).map(([field, attribute]) => ({ field, attribute })),
    ],
  };
  // the link's provider id is its draft's, and stays the provider's once activated
  const oidc = { redirect_uri: oidcCallbackUrl(ctx, provider ?? { project_ref: link.project_ref, id: link.provider_id }), scopes: provider?.scopes ?? DEFAULT_SCOPES };
  return { saml: link.kind === 'oidc' ? null : saml, oidc: link.kind === 'saml' ? null : oidc };
}

/** The draft as the page shows it: the provider response (never the client secret) plus whether one is stored. */
function presentDraft(ctx: SsoContext, p: ProviderRow | null) {
  if (!p) return null;
  return { ...presentProvider(ctx, p), has_client_secret: !!p.client_secret_enc };
}

const saveBody = {
  type: 'object',
  additionalProperties: false,
  required: ['kind'],
  properties: {
    kind: { type: 'string', enum: ['oidc', 'saml'] },
    name: providerFields.name,
    issuer: providerFields.issuer,
    client_id: providerFields.client_id,
    client_secret: providerFields.client_secret,
    metadata_url: providerFields.metadata_url,
    metadata_xml: { type: 'string', minLength: 1, maxLength: 512_000, pattern: MULTILINE_TEXT },
    attribute_mapping: providerFields.attribute_mapping,
  },
} as const;

type SaveBody = Pick<ProviderInput, 'name' | 'issuer' | 'client_id' | 'client_secret' | 'metadata_url' | 'metadata_xml' | 'attribute_mapping'> & { kind: 'oidc' | 'saml' };

/** What the owner's email says moved from other providers to the activated one. */
function movedLines(warnings: TakeoverWarning[]): string[] {
  if (!warnings.length) return ['No users moved from another provider: no other live provider served these domains or a parent of them.'];
  return [
    'Users who moved to it from another live provider (the most specific domain decides; the other provider may no longer sign them in):',
    ...warnings.map((w) => `- users of ${w.domain}, who signed in through "${w.provider_name}" (${w.provider_domain}, id ${w.provider_id}) until now`),
  ];
}

export async function registerSetupPageRoutes(app: FastifyInstance, ctx: SsoContext): Promise<void> {
  // per client address, like the public auth endpoints (a link's secret cannot be guessed anyway)
  const config: FastifyContextConfig = { access: 'setup-link', ...limited(ctx.cfg.SSO_SETUP_RATE_LIMIT) };
  const security = [{ setupLink: [] }];
  const common = { tags: ['sso-setup'], security };
  const errors = { 400: errorSchema, 404: errorSchema, 410: errorSchema, 429: errorSchema };
  // JSON only: Fastify's default text/plain parser would take a body a cross-site form can send (415)
  app.removeContentTypeParser('text/plain');
  // no cache anywhere: these answers are for the link holder only
  app.addHook('onSend', async (req, reply) => {
    if (req.routeOptions.config?.access === 'setup-link') reply.header('cache-control', 'no-store');
  });

  app.get('/v1/sso-setup', { config, schema: { ...common, summary: 'The setup link: what to enter at the IdP, the provider so far, the last test', response: errors } }, async (req) => {
    const { link, project } = setupLinkOf(req);
    const provider = await draftOf(ctx, link);
    const last = await latestTest(ctx, link.id);
    return {
      link: { id: link.id, kind: link.kind, domains: link.domains, expires_at: link.expires_at },
      project: { ref: project.ref },
      ...spSide(ctx, link, provider),
      provider: presentDraft(ctx, provider),
      last_test: last ? { id: last.id, ok: last.ok, created_at: last.created_at, current: !!provider && testIsCurrent(last, provider) } : null,
      can_activate: !!provider && testCovers(last, provider),
    };
  });

  app.put<{ Body: SaveBody }>(
    '/v1/sso-setup/provider',
    { config, schema: { ...common, summary: "Save the IdP side of the link's provider (a draft until activated)", body: saveBody, response: { ...errors, 409: errorSchema } } },
    async (req) => {
      const { link } = setupLinkOf(req);
      const b = req.body;
      if (link.kind !== 'any' && link.kind !== b.kind) throw new ApiError('validation_failed', `This setup link is for a ${link.kind.toUpperCase()} provider.`);
      const audit = linkAudit(req, link);
      let existing = await draftOf(ctx, link);
      if (existing && existing.kind !== b.kind) {
        // switching protocol: the draft of the other kind is thrown away (it was never live)
        await withTransaction(ctx.db, async (c) => {
          await stillUsable(link, existing!.kind)(c);
          if (await deleteProvider(c, link.project_ref, existing!.id)) await audit(c, { action: 'sso_provider.delete', resourceType: 'sso_provider', resourceId: existing!.id, details: { kind: existing!.kind, draft: true } });
        });
        existing = null;
      }
      const { kind, ...fields } = b;
      let saved: ProviderRow;
      try {
        if (existing) {
          // the secret is write-only: leaving it out keeps the stored one
          saved = (await changeProvider(ctx, link.project_ref, existing, fields, audit, { guard: stillUsable(link, existing.kind) })).provider;
        } else {
          const name = b.name ?? `SSO for ${link.domains[0]}`;
          saved = (await createProvider(ctx, link.project_ref, link.provider_id, { ...fields, kind, name, domains: link.domains }, audit, { draft: true, guard: stillUsable(link, null) })).provider;
        }
      } catch (e) {
        // the IdP's address is the link holder's choice: what happened there is not told (docs/sso.md)
        throw withoutNetworkDetail(e);
      }
      req.log.info({ project: link.project_ref, setup_link: link.id, provider: saved.id }, 'sso setup link saved its provider');
      return presentDraft(ctx, saved);
    },
  );

  app.post('/v1/sso-setup/test', { config, schema: { ...common, summary: 'Start a test sign-in against the draft provider; answers the IdP URL to open', response: errors } }, async (req) => {
    const { link, project } = setupLinkOf(req);
    const provider = await draftOf(ctx, link);
    if (!provider) throw new ApiError('validation_failed', 'Save the identity provider settings first.');
    const flowId = newFlowId();
    const started = await kindOf(provider.kind).start(ctx, { project, provider, flowId });
    await insertFlow(ctx, {
      id: flowId,
      project_ref: project.ref,
      provider_id: provider.id,
      redirect_to: setupPageUrl(ctx),
      code_challenge: null,
      code_challenge_method: null,
      setup_link_id: link.id,
      ...started.flow,
    });
    await recordSetupLinkAudit(ctx.db, link.id, req.id, link.project_ref, {
      action: 'sso_setup_link.test_start',
      resourceType: 'sso_setup_link',
      resourceId: link.id,
      details: { provider_id: provider.id, kind: provider.kind, flow_id: flowId },
    });
    return { url: started.url };
  });

  app.get<{ Params: { id: string } }>(
    '/v1/sso-setup/tests/:id',
    { config, schema: { ...common, summary: 'What a test sign-in found', params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 64 } } }, response: errors } },
    async (req) => {
      const { link } = setupLinkOf(req);
      const t = await getTest(ctx, link.id, req.params.id);
      if (!t) throw new ApiError('not_found', 'No such test sign-in for this link.');
      const provider = await draftOf(ctx, link);
      return { id: t.id, created_at: t.created_at, current: !!provider && testIsCurrent(t, provider), ...forHolder(t.result) };
    },
  );

  app.post('/v1/sso-setup/activate', { config, schema: { ...common, summary: 'Activate the provider (needs a passing test of its current settings)', response: { ...errors, 409: errorSchema } } }, async (req) => {
    const { link } = setupLinkOf(req);
    const provider = await draftOf(ctx, link);
    const last = await latestTest(ctx, link.id);
    if (!provider || !testCovers(last, provider)) throw new ApiError('sso_setup_test_required');
    const test = last!;
    const audit = linkAudit(req, link);
    const warnings = await withTransaction(ctx.db, async (c) => {
      // a revocation or activation meanwhile wins; this one then finds the link gone
      await stillUsable(link, provider.kind)(c);
      // checked again now, not only when the link was made: a provider enabled since then for a
      // parent domain loses its users of the link's domains to this one (said in the answer and
      // in the owner's email)
      const moved = await takeoverWarnings(c, link.project_ref, provider.domains, { exclude: provider.id, moment: 'now' });
      // Only the settings the passing test ran against go live: a save since then, even one whose
      // write landed after the check above, changed updated_at, so nothing is updated. (The test
      // keeps the version at JavaScript's millisecond precision.)
      if (!(await activateDraft(c, link.project_ref, provider.id, test.config_version))) throw new ApiError('sso_setup_test_required');
      if (!(await markActivated(c, link.id))) throw gone('used');
      await audit(c, providerUpdated(provider, { enabled: true }, {}, undefined));
      const takesOver = moved.length ? { takes_over_from: moved.map((w) => ({ domain: w.domain, provider_id: w.provider_id })) } : {};
      await audit(c, { action: 'sso_setup_link.activate', resourceType: 'sso_setup_link', resourceId: link.id, details: { provider_id: provider.id, kind: provider.kind, domains: provider.domains, test_id: test.id, ...takesOver } });
      return moved;
    });
    const activated = await mustGet(ctx, link.project_ref, provider.id);
    req.log.info({ project: link.project_ref, setup_link: link.id, provider: provider.id }, 'sso provider activated through a setup link');
    const tested = test.result as { email?: string };
    const notice = await notifyOwner(ctx, link.project_ref, {
      subject: `SSO provider activated for ${link.domains.join(', ')}`,
      text: [
        `An SSO provider was activated through a setup link of project ${link.project_ref}.`,
        '',
        `Provider: ${activated.name} (${activated.kind.toUpperCase()}, id ${activated.id})`,
        `Domains: ${activated.domains.join(', ')}`,
        activated.kind === 'saml' ? `IdP entity ID: ${activated.idp_entity_id}` : `Issuer: ${activated.issuer}`,
        `Tested with: ${tested.email ?? 'unknown'}`,
        `Setup link: ${link.id} (it no longer works)`,
        '',
        'Users of these domains now sign in through it. To turn it off: PATCH the provider with {"enabled": false}, or use the dashboard.',
        '',
        ...movedLines(warnings),
      ].join('\n'),
    });
    return { provider: presentDraft(ctx, activated), owner_notified: notice.sent, warnings };
  });
}
