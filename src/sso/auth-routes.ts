// The project's public auth endpoints under /projects/{ref}/auth/v1, speaking the wire protocol of
// @supabase/auth-js: POST /sso (signInWithSSO), POST /token?grant_type=pkce|refresh_token
// (exchangeCodeForSession, refresh), GET /user, POST /logout, GET /.well-known/jwks.json. All but
// the IdP-facing routes require the project's anon key in the `apikey` header.
//
// Error bodies keep the service's {code, message}; the X-Supabase-Api-Version header tells
// auth-js (>= API 2024-01-01) to read `code` as its error code.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';
import type { RateLimit } from '../config.js';
import { ApiError } from '../errors.js';
import { refParams, TEXT } from '../http/index.js';
import { bearerToken, jwks, verifyAccessToken } from './sessions/access-tokens.js';
import { authProjectOf } from './auth-project.js';
import { emailDomain, normalizeDomain } from './sign-in/domain-routing.js';
import { deleteExpiredFlows, insertFlow, newFlowId } from './sign-in/flows.js';
import { kindOf, kinds } from './providers/kinds.js';
import { isValidPkceValue, normalizeChallengeMethod } from './sign-in/pkce.js';
import { getProvider, providerForDomain } from './providers/store.js';
import { resolveRedirect } from './sign-in/redirects.js';
import { exchangeCode, refreshSession, requireLiveSession, signOut } from './sessions/sessions.js';
import type { SsoContext } from './types.js';
import { loadUser } from './users/store.js';
import { presentUser } from './users/view.js';

const API_VERSION = '2024-01-01';
const params = refParams;
const security = [{ apiKey: [] }];
// text fields refuse control characters and unpaired surrogates (400, not a normalised or stored value)
const text = (maxLength: number, minLength = 0) => ({ type: 'string', minLength, maxLength, pattern: TEXT }) as const;
const nullableString = (maxLength: number) => ({ type: ['string', 'null'], maxLength, pattern: TEXT });

interface SsoBody {
  provider_id?: string;
  domain?: string;
  email?: string;
  redirect_to?: string;
  skip_http_redirect?: boolean;
  code_challenge?: string | null;
  code_challenge_method?: string | null;
}

/**
 * Per client address, across projects: a key that also named the project would let one client
 * create counters at will (any ref in the path) and push its own out of the limiter's bounded cache.
 * IPv6 clients are counted per /64, the block one subscriber usually holds. The anon key is public,
 * so it is not an identity either.
 */
export function clientKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const addr = ipaddr.process(ip); // an IPv4-mapped IPv6 address counts as its IPv4 address
  if (addr.kind() === 'ipv4') return addr.toString();
  return `${(addr as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
}

export function limited(limit: RateLimit | null) {
  if (!limit) return {};
  return { rateLimit: { max: limit.max, timeWindow: limit.windowMs, keyGenerator: (req: FastifyRequest) => clientKey(req.ip) } };
}

export async function registerAuthApi(app: FastifyInstance, ctx: SsoContext): Promise<void> {
  // Browser apps on any origin call these endpoints with the anon key in a header (never cookies),
  // so CORS can allow every origin without credentials, as hosted auth services do.
  app.addHook('onSend', async (req, reply) => {
    // the routes of this scope (the router's match, whatever the spelling), not a 404 of another area
    if (!req.routeOptions.url?.startsWith('/projects/')) return;
    reply.header('x-supabase-api-version', API_VERSION);
    reply.header('access-control-allow-origin', '*');
    reply.header('access-control-expose-headers', 'x-supabase-api-version, x-request-id');
  });
  app.options(
    '/projects/:ref/auth/v1/*',
    { config: { access: 'public' }, schema: { hide: true } },
    async (_req, reply) =>
      reply
        .code(204)
        .header('access-control-allow-methods', 'GET, POST, OPTIONS')
        .header('access-control-allow-headers', 'apikey, authorization, content-type, x-client-info, x-supabase-api-version')
        .header('access-control-max-age', '600')
        .send(),
  );
  // auth-js sends POST /logout with a JSON content type and no body: the server's JSON parser reads
  // an empty body as no body (src/http/server.ts).
  for (const kind of Object.values(kinds)) kind!.registerRoutes(app, ctx);

  app.post<{ Params: { ref: string }; Body: SsoBody }>(
    '/projects/:ref/auth/v1/sso',
    {
      config: { access: 'api-key', ...limited(ctx.cfg.AUTH_RATE_LIMIT_SSO) },
      schema: {
        tags: ['sso'],
        summary: 'Start an SSO sign-in (signInWithSSO)',
        security,
        params,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            provider_id: text(64),
            domain: text(253),
            email: text(320),
            redirect_to: text(2048),
            skip_http_redirect: { type: 'boolean' },
            code_challenge: nullableString(128),
            code_challenge_method: nullableString(16),
            gotrue_meta_security: { type: 'object' },
          },
        },
      },
    },
    async (req, reply) => {
      const project = authProjectOf(req);
      if (!project.features.includes('sso')) throw new ApiError('feature_not_in_plan', "The project's plan does not include SSO.");
      const b = req.body ?? {};
      const selectors = [b.provider_id, b.domain, b.email].filter((v) => v !== undefined);
      if (selectors.length !== 1) throw new ApiError('validation_failed', 'Send exactly one of provider_id, domain or email.');
      if (!b.code_challenge) throw new ApiError('validation_failed', 'PKCE is required: send code_challenge and code_challenge_method (supabase-js: flowType "pkce").');
      const method = normalizeChallengeMethod(b.code_challenge_method);
      if (!method || !isValidPkceValue(b.code_challenge)) throw new ApiError('validation_failed', 'code_challenge must be 43-128 URL-safe characters and code_challenge_method s256 or plain.');

      let provider = null;
      if (b.provider_id !== undefined) {
        const p = await getProvider(ctx.db, project.ref, b.provider_id);
        provider = p?.enabled ? p : null;
      } else {
        const domain = b.domain !== undefined ? normalizeDomain(b.domain) : emailDomain(b.email!);
        provider = domain ? await providerForDomain(ctx.db, project.ref, domain) : null;
      }
      if (!provider) throw new ApiError('sso_provider_not_found');

      const redirectTo = resolveRedirect(project, b.redirect_to);
      const flowId = newFlowId();
      const started = await kindOf(provider.kind).start(ctx, { project, provider, flowId });
      await insertFlow(ctx, {
        id: flowId,
        project_ref: project.ref,
        provider_id: provider.id,
        redirect_to: redirectTo,
        code_challenge: b.code_challenge,
        code_challenge_method: method,
        ...started.flow,
      });
      deleteExpiredFlows(ctx).catch((err) => req.log.warn({ err }, 'could not delete expired sign-in state'));
      if (b.skip_http_redirect) return { url: started.url };
      return reply.redirect(started.url, 303);
    },
  );

  app.post<{ Params: { ref: string }; Querystring: { grant_type: 'pkce' | 'refresh_token' }; Body: { auth_code?: string; code_verifier?: string; refresh_token?: string } }>(
    '/projects/:ref/auth/v1/token',
    {
      config: { access: 'api-key', ...limited(ctx.cfg.AUTH_RATE_LIMIT_TOKEN) },
      schema: {
        tags: ['sso'],
        summary: 'Exchange a sign-in code (grant_type=pkce) or a refresh token for a session',
        security,
        params,
        querystring: { type: 'object', additionalProperties: false, required: ['grant_type'], properties: { grant_type: { type: 'string', enum: ['pkce', 'refresh_token'] } } },
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            auth_code: text(256, 1),
            code_verifier: text(256, 1),
            refresh_token: text(256, 1),
          },
        },
      },
    },
    async (req) => {
      const project = authProjectOf(req);
      const b = req.body ?? {};
      if (req.query.grant_type === 'pkce') {
        if (!b.auth_code || !b.code_verifier) throw new ApiError('validation_failed', 'auth_code and code_verifier are required.');
        return exchangeCode(ctx, project, b.auth_code, b.code_verifier);
      }
      if (!b.refresh_token) throw new ApiError('validation_failed', 'refresh_token is required.');
      return refreshSession(ctx, project, b.refresh_token);
    },
  );

  app.get<{ Params: { ref: string } }>(
    '/projects/:ref/auth/v1/user',
    { config: { access: 'api-key' }, schema: { tags: ['sso'], summary: 'The signed-in user (Authorization: Bearer <access token>)', security, params } },
    async (req) => {
      const project = authProjectOf(req);
      const claims = await verifyAccessToken(ctx, project, bearerToken(req.headers.authorization));
      await requireLiveSession(ctx, project, claims.session_id, claims.sub);
      const user = await loadUser(ctx.db, project.ref, claims.sub);
      if (!user) throw new ApiError('user_not_found');
      return presentUser(user);
    },
  );

  app.post<{ Params: { ref: string }; Querystring: { scope?: 'global' | 'local' | 'others' } }>(
    '/projects/:ref/auth/v1/logout',
    {
      config: { access: 'api-key' },
      schema: {
        tags: ['sso'],
        summary: "Sign out: this session (local), the user's other sessions (others) or all of them (global, default)",
        security,
        params,
        querystring: { type: 'object', additionalProperties: false, properties: { scope: { type: 'string', enum: ['global', 'local', 'others'] } } },
      },
    },
    async (req, reply) => {
      const project = authProjectOf(req);
      const claims = await verifyAccessToken(ctx, project, bearerToken(req.headers.authorization));
      // an access token outlives its session (ACCESS_TOKEN_TTL): one of a session that has ended
      // signs nothing out (GoTrue answers session_not_found too), or a token copied from a device
      // signed out an hour ago could still sign the user out everywhere
      await requireLiveSession(ctx, project, claims.session_id, claims.sub);
      await signOut(ctx, project, claims.session_id, claims.sub, req.query.scope ?? 'global');
      return reply.code(204).send();
    },
  );

  app.get<{ Params: { ref: string } }>(
    '/projects/:ref/auth/v1/.well-known/jwks.json',
    { config: { access: 'api-key' }, schema: { tags: ['sso'], summary: "The project's access-token signing keys (JWKS)", security, params } },
    async (req, reply) => {
      const project = authProjectOf(req);
      // short: after a key rotation the new key signs at once, and a cache in between must not hide
      // it for long (clients such as auth-js also refetch when they meet an unknown kid)
      reply.header('cache-control', 'public, max-age=60');
      return jwks(project);
    },
  );
}
