// Who may call a route: declared on the route, decided on the matched route, denied by default.
//
// Every route says who may call it in its options, `config: { access: ... }`:
//   'project-owner'  the owner of the project named by the route's :ref (owner token), and the
//                    plan must include config.feature when the route names one;
//   'owner'          any owner (owner token); the handler scopes what it returns to that owner;
//   'api-key'        the project's anon key (`apikey` header) for the route's :ref;
//   'setup-link'     the holder of an SSO setup link (`Authorization: Bearer ssl_…`);
//   'public'         anyone: the request is authenticated by what it carries, if at all (an IdP's
//                    signed answer, a sign-in flow's state), or the route serves public material.
//
// One onRoute hook reads the declaration when the route is registered and attaches the one guard
// for it as the route's own onRequest hook, so the decision is made on the route the router
// matched — after percent-decoding, absolute-form targets, duplicate or trailing slashes, whatever
// the spelling — and never on the raw URL. A route registered without a declaration (or with one
// that cannot hold, like 'project-owner' without :ref) throws at registration: the service refuses
// to start, so a new route cannot be forgotten. Routes that a third-party plugin registers (the
// docs UI, static files) are declared for the whole scope the plugin is registered in
// (`declareScopeAccess`).
//
// The guard runs before the body is parsed or validated, so nothing about a body is evaluated for
// someone who may not use the route (a non-owner with a bad body gets 404, never 400):
//   1. `Authorization: Bearer <owner token>` is valid, else 401 unauthorized;
//   2. the project exists and is the caller's, else 404 project_not_found: the same answer for
//      both, so refs cannot be probed;
//   3. the plan includes the route's config.feature, else 402 feature_not_in_plan.
// The API-key and setup-link checks belong to the SSO area and are passed in (AccessVerifiers).
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions, onRequestHookHandler } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { ownerTokenFor, PROJECT_REF, type Feature } from '../projects/index.js';

export const ACCESS = ['public', 'owner', 'project-owner', 'api-key', 'setup-link'] as const;
export type Access = (typeof ACCESS)[number];

declare module 'fastify' {
  interface FastifyRequest {
    ownerId?: string;
    /** the owner_tokens row used, recorded as the actor in the audit log */
    ownerTokenId?: string;
    /** the caller's project, loaded by the guard for every 'project-owner' route */
    project?: ProjectRow;
  }
  interface FastifyContextConfig {
    /** who may call the route (required on every route; see src/http/access.ts) */
    access?: Access;
    /** a plan feature the route requires (402 feature_not_in_plan without it) */
    feature?: Feature;
  }
}

export interface ProjectRow {
  ref: string;
  owner_id: string;
  plan: string;
  features: Feature[];
  anon_key: string;
  site_url: string;
  additional_redirect_urls: string[];
  disable_signup: boolean;
  allow_linking: boolean;
  outbox_enabled_at: Date | null;
  created_at: Date;
}

type Ctx = Pick<AppContext, 'db'>;

/** A check of one kind of caller: resolves when the request may go on, throws an ApiError otherwise. */
export type Verifier = (req: FastifyRequest) => Promise<void>;
/** The checks another area owns (the SSO area's API key and setup link). */
export type AccessVerifiers = Record<'api-key' | 'setup-link', Verifier>;

/** Step 1 alone: sets req.ownerId and req.ownerTokenId, or throws 401. */
async function requireOwner(ctx: Ctx, req: FastifyRequest): Promise<void> {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer\s+(\S{8,512})$/i.exec(h.trim()) : null;
  if (!m) throw new ApiError('unauthorized');
  const owner = await ownerTokenFor(ctx, m[1]);
  if (!owner) throw new ApiError('unauthorized');
  req.ownerId = owner.ownerId;
  req.ownerTokenId = owner.tokenId;
}

/** The project row the guard loads (also to show a project again after a change), or undefined. */
export async function loadProjectRow(ctx: Ctx, ref: string): Promise<ProjectRow | undefined> {
  const r = await ctx.db.query(
    `select j.ref, j.owner_id, j.plan, p.features, j.anon_key, j.site_url, j.additional_redirect_urls, j.disable_signup,
            j.allow_linking, j.outbox_enabled_at, j.created_at
       from projects j join plans p on p.name = j.plan where j.ref = $1`,
    [ref],
  );
  return r.rows[0] as ProjectRow | undefined;
}

/** Step 2: the caller's project `ref`, or 404 project_not_found. */
async function ownedProject(ctx: Ctx, req: FastifyRequest, ref: unknown): Promise<ProjectRow> {
  // A ref that cannot exist (or holds a NUL byte Postgres would reject) is simply not found.
  if (typeof ref !== 'string' || !PROJECT_REF.test(ref)) throw new ApiError('project_not_found');
  const row = await loadProjectRow(ctx, ref);
  if (!row || row.owner_id !== req.ownerId) throw new ApiError('project_not_found');
  return row;
}

function requireFeature(project: ProjectRow, feature: Feature): void {
  if (!project.features.includes(feature)) {
    throw new ApiError('feature_not_in_plan', `The ${project.plan} plan does not include ${feature === 'sso' ? 'SSO' : 'custom SMTP'}; upgrade to ${feature === 'sso' ? 'enterprise' : 'pro or enterprise'}.`);
  }
}

/** The owner checks, one per kind the HTTP layer decides itself. */
export function ownerVerifiers(ctx: Ctx): Record<'owner' | 'project-owner', Verifier> {
  return {
    owner: (req) => requireOwner(ctx, req),
    'project-owner': async (req) => {
      await requireOwner(ctx, req);
      req.project = await ownedProject(ctx, req, (req.params as { ref?: unknown } | undefined)?.ref);
      const needed = req.routeOptions.config?.feature;
      if (needed) requireFeature(req.project, needed);
    },
  };
}

/** The project the guard loaded for this request ('project-owner' routes). */
export function guardedProject(req: FastifyRequest): ProjectRow {
  if (!req.project) throw new Error('the project-owner guard did not run for this route');
  return req.project;
}

/** One registered route and who may call it: what the authorization matrix test walks. */
export interface RouteAccess {
  method: string;
  url: string;
  access: Access;
  feature?: Feature;
}

const SCOPE_ACCESS = Symbol.for('integrations.scopeAccess');
const TABLE = Symbol.for('integrations.routeAccessTable');
type Scoped = FastifyInstance & { [SCOPE_ACCESS]?: Access; [TABLE]?: RouteAccess[] };

/**
 * Declares `access` for every route registered in `scope` (and its children) that declares none
 * itself: for routes a third-party plugin registers, whose options we do not write. Call it on a
 * scope of its own (`app.register(async (scope) => { declareScopeAccess(scope, 'public'); ... })`).
 */
export function declareScopeAccess(scope: FastifyInstance, access: Access): void {
  (scope as Scoped)[SCOPE_ACCESS] = access;
}

/** Every route registered since installAccessControl, with its declared access. */
export function routeAccessTable(app: FastifyInstance): readonly RouteAccess[] {
  const t = (app as Scoped)[TABLE];
  if (!t) throw new Error('installAccessControl was not called on this server');
  return t;
}

const OPENAPI_SECURITY: Record<Access, Array<Record<string, string[]>> | undefined> = {
  public: [],
  owner: [{ ownerToken: [] }],
  'project-owner': [{ ownerToken: [] }],
  'api-key': [{ apiKey: [] }],
  'setup-link': [{ setupLink: [] }],
};

/**
 * Installs the declaration check and the guard; must be called on the root instance before any
 * route is registered (buildServer does, before the docs UI, after the rate limiter so that
 * a rate-limited route counts a request before it is authenticated).
 */
export function installAccessControl(app: FastifyInstance, verifiers: Record<Exclude<Access, 'public'>, Verifier>): void {
  const table: RouteAccess[] = [];
  (app as Scoped)[TABLE] = table;
  const guards = new Map<Access, onRequestHookHandler>();
  for (const access of ACCESS) {
    if (access === 'public') continue;
    const verify = verifiers[access];
    guards.set(access, async function accessGuard(req: FastifyRequest, _reply: FastifyReply) {
      await verify(req);
    });
  }

  app.addHook('onRoute', function (this: Scoped, opts: RouteOptions) {
    const methods = ([] as string[]).concat(opts.method);
    const where = `${methods.join(',')} ${opts.url}`;
    const access = opts.config?.access ?? this[SCOPE_ACCESS];
    if (access === undefined) throw new Error(`${where} declares no access: add config.access ('${ACCESS.join("', '")}') to its options (src/http/access.ts)`);
    if (!ACCESS.includes(access)) throw new Error(`${where} declares an unknown access '${String(access)}'`);
    const hasRef = /(^|\/):ref(\/|$)/.test(opts.url);
    if ((access === 'project-owner' || access === 'api-key') && !hasRef) throw new Error(`${where} is '${access}' but has no :ref parameter to decide it on`);
    if (opts.config?.feature && access !== 'project-owner') throw new Error(`${where} names a plan feature but is '${access}': only 'project-owner' routes check plans`);
    opts.config = { ...opts.config, access };
    if (access !== 'public') {
      const before = opts.onRequest === undefined ? [] : Array.isArray(opts.onRequest) ? opts.onRequest : [opts.onRequest];
      // a new array: Fastify's HEAD twin of a GET route shares the original one
      opts.onRequest = [...before, guards.get(access)!];
    }
    // the OpenAPI document says what the guard enforces
    if (opts.schema && !opts.schema.hide && opts.schema.security === undefined) opts.schema = { ...opts.schema, security: OPENAPI_SECURITY[access] };
    for (const method of methods) table.push({ method, url: opts.url, access, ...(opts.config.feature ? { feature: opts.config.feature } : {}) });
  });
}
