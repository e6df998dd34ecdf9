// The IdP-facing SAML routes of a provider (no API key: the IdP and the browser call them):
//   GET  /projects/{ref}/auth/v1/sso/saml/metadata/{provider_id}  our SP metadata (also our entity ID)
//   POST /projects/{ref}/auth/v1/sso/saml/acs/{provider_id}       the ACS, HTTP-POST binding
import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../errors.js';
import { ref, uuid } from '../../http/index.js';
import { loadAuthProject } from '../auth-project.js';
import { getProvider } from '../providers/store.js';
import { spMetadataXml } from './core/index.js';
import { consumeSamlResponse } from './acs.js';
import { spConfig } from './settings.js';
import { liveLinkForProvider } from '../setup/links.js';
import type { SsoContext } from '../types.js';

const params = {
  type: 'object',
  required: ['ref', 'providerId'],
  properties: { ref, providerId: uuid },
} as const;

// The core refuses responses over 512 KiB of XML; their base64, form-encoded, stays under this.
const ACS_BODY_LIMIT = 1024 * 1024;

interface AcsBody {
  SAMLResponse?: unknown;
  RelayState?: unknown;
}

export function registerSamlRoutes(app: FastifyInstance, ctx: SsoContext): void {
  app.get<{ Params: { ref: string; providerId: string } }>(
    '/projects/:ref/auth/v1/sso/saml/metadata/:providerId',
    { config: { access: 'public' }, schema: { tags: ['sso'], summary: "A SAML provider's SP metadata, for the IdP admin (its URL is also the SP entity ID)", params } },
    async (req, reply) => {
      const provider = await getProvider(ctx.db, req.params.ref, req.params.providerId);
      // A setup link reserves its provider's id, so the IdP admin can import our metadata before
      // the provider is saved (the IdP side is often made first, to get its own metadata).
      const reserved = !provider && (await liveLinkForProvider(ctx.db, req.params.ref, req.params.providerId));
      const sp = provider?.kind === 'saml' ? provider : reserved && reserved.kind !== 'oidc' ? { id: reserved.provider_id, project_ref: reserved.project_ref } : null;
      if (!sp) throw new ApiError('not_found', 'No such SAML provider.');
      return reply.type('application/samlmetadata+xml; charset=utf-8').send(spMetadataXml(spConfig(ctx, sp)));
    },
  );

  // Form bodies are accepted on this route only (its own plugin scope), not on the JSON API.
  app.register(async (scope) => {
    await scope.register(formbody);
    scope.post<{ Params: { ref: string; providerId: string }; Body: AcsBody }>(
      '/projects/:ref/auth/v1/sso/saml/acs/:providerId',
      {
        // the IdP's signed answer is the credential, checked by the handler (saml/acs.ts)
        config: { access: 'public' },
        bodyLimit: ACS_BODY_LIMIT,
        // A malformed POST still ends in a redirect with invalid_saml_response, not a JSON 400 the
        // user would be left looking at: the handler reads the validation result itself.
        attachValidation: true,
        schema: {
          tags: ['sso'],
          summary: 'SAML Assertion Consumer Service (HTTP-POST binding; the IdP has the browser post here)',
          consumes: ['application/x-www-form-urlencoded'],
          params,
          body: {
            type: 'object',
            additionalProperties: false,
            required: ['SAMLResponse', 'RelayState'],
            properties: {
              SAMLResponse: { type: 'string', minLength: 1, maxLength: ACS_BODY_LIMIT },
              RelayState: { type: 'string', minLength: 1, maxLength: 80 },
            },
          },
        },
      },
      async (req, reply) => {
        // attachValidation keeps a bad form on the redirect path below, but a path that names no
        // possible project or provider (a NUL, a non-uuid) never reaches the database
        if (req.validationError?.validationContext === 'params') throw new ApiError('not_found');
        const project = await loadAuthProject(ctx, req.params.ref);
        if (!project) throw new ApiError('not_found');
        const body = (req.body ?? {}) as AcsBody;
        const text = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
        if (req.validationError) req.log.info({ reason: req.validationError.message }, 'saml acs post is not a SAML response form');
        const target = await consumeSamlResponse(ctx, req.log, {
          project,
          providerId: req.params.providerId,
          relayState: text(body.RelayState),
          samlResponse: req.validationError ? undefined : text(body.SAMLResponse),
        });
        return reply.redirect(target, 303);
      },
    );
  });
}
