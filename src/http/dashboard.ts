// The owner's dashboard: the Vite build in web/dist, served at /dashboard/ under a strict
// Content-Security-Policy. The page talks only to this service's Management API (same origin),
// so nothing outside 'self' is ever needed, and it may not be framed.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';
import { repoRoot } from '../config.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { declareScopeAccess } from './access.js';

export const dashboardDist = path.join(repoRoot, 'web', 'dist') + path.sep;

export const dashboardCsp = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const securityHeaders: Record<string, string> = {
  'content-security-policy': dashboardCsp,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
};

/** Register in a scope of its own (`app.register(...)`): the headers hook then covers only these routes. */
export async function registerDashboard(app: FastifyInstance, ctx: Pick<AppContext, 'log'>, root = dashboardDist): Promise<void> {
  // the page and its assets are public; what it shows comes from the API with the owner's token
  declareScopeAccess(app, 'public');
  app.addHook('onSend', async (_req, reply) => {
    reply.headers(securityHeaders);
  });

  if (!existsSync(`${root}/index.html`)) {
    // A checkout without `npm ci` (which builds it): say how to fix it rather than a bare 404.
    ctx.log.warn(`dashboard not built (${root} is missing): run npm run build:web`);
    app.get('/dashboard/*', { schema: { hide: true } }, async () => {
      throw new ApiError('service_unavailable', 'The dashboard is not built on this server: run npm run build:web.');
    });
    app.get('/dashboard', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/dashboard/'));
    return;
  }

  // The page itself, at /dashboard/ only: its asset URLs are relative, so /dashboard (which the
  // server's ignoreTrailingSlash routes here too) is redirected to the address they resolve against.
  app.get('/dashboard/', { schema: { hide: true } }, async (req, reply) => {
    if (!req.url.split('?')[0].endsWith('/')) return reply.redirect('/dashboard/', 301);
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(await readFile(`${root}/index.html`));
  });

  await app.register(fastifyStatic, {
    root,
    prefix: '/dashboard/',
    index: false,
    decorateReply: false,
    schemaHide: true,
    dotfiles: 'deny',
    cacheControl: false,
    // File names under assets/ carry a content hash: cache them for good; always revalidate the page.
    setHeaders: (reply, path) => {
      reply.header('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
}
