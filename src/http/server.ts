// The Fastify server: one error handler, request ids, redacted logs, OpenAPI from route schemas.
// `buildServer` never listens, so tests can use inject() or listen on port 0 themselves.
import Fastify, { type FastifyInstance, type FastifyError, type FastifyBaseLogger, type FastifyReply } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import rateLimit from '@fastify/rate-limit';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Logger } from 'pino';
import { ApiError, isApiError } from '../errors.js';
import { isDatabaseUnavailable } from '../db/index.js';
import { httpRequests } from '../lib/metrics.js';
import { declareScopeAccess, installAccessControl, type Access, type Verifier } from './access.js';

export interface ServerOptions {
  logger: Logger;
  publicUrl: string;
  bodyLimit?: number;
  /** TRUST_PROXY (config.ts); default: loopback only */
  trustProxy?: string;
  /** the check of each kind of caller a route may declare (src/routes.ts accessVerifiers) */
  access: Record<Exclude<Access, 'public'>, Verifier>;
}

/** TRUST_PROXY as Fastify takes it: a boolean, a hop count, or addresses/CIDRs. */
export function trustProxyOption(raw = 'loopback'): boolean | string | ((addr: string, hop: number) => boolean) {
  const v = raw.trim();
  if (v === 'true') return true;
  if (v === 'false' || v === '') return false;
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    return (_addr, hop) => hop < hops; // trust the nearest `hops` proxies
  }
  return v;
}

export async function buildServer(opts: ServerOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger as unknown as FastifyBaseLogger,
    bodyLimit: opts.bodyLimit ?? 1_048_576,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    trustProxy: trustProxyOption(opts.trustProxy),
    // Unknown body fields are refused (additionalProperties: false in every schema); coercion only
    // for querystrings and params, never for bodies.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false, useDefaults: true } },
    routerOptions: { ignoreTrailingSlash: true },
    // Router failures (a path with broken percent-encoding) and malformed HTTP (headers too large)
    // answer in the same {code, message} format as everything else.
    frameworkErrors: (err, _req, reply) => {
      const e = new ApiError('bad_request', err.code === 'FST_ERR_BAD_URL' ? 'The URL is not valid (bad percent-encoding).' : undefined);
      void (reply as FastifyReply).code(e.status).send(e.toJSON());
    },
    clientErrorHandler: (err, socket) => {
      const code = (err as { code?: string }).code;
      if (code === 'ECONNRESET' || code === 'EPIPE' || !socket.writable) return void socket.destroy();
      const e = new ApiError(code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'bad_request');
      const body = JSON.stringify(e.toJSON());
      socket.end(`HTTP/1.1 ${e.status} ${STATUS_CODES[e.status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    },
  });

  app.addHook('onSend', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });

  // An empty body sent as application/json (curl -H 'content-type: application/json' with no -d,
  // auth-js's POST /logout) is no body: routes whose body is optional take it, routes that need one
  // answer validation_failed "body must be object". Anything else goes through Fastify's own parser
  // (secure-json-parse: __proto__ and constructor.prototype keys are refused).
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    json(req, body as string, done);
  });

  // Rate limits are per route (config.rateLimit, e.g. the public auth endpoints), in memory per
  // process: with N api processes behind a balancer a client gets up to N times the limit.
  await app.register(rateLimit, {
    global: false,
    cache: 50_000, // client addresses tracked per route (LRU)
    errorResponseBuilder: (_req, c) => new ApiError('rate_limited', `Too many requests from this client (at most ${c.max} in the window); retry after ${c.after}.`),
  });

  // Who may call each route, declared on the route and decided on the matched route; a route
  // without a declaration stops the start (src/http/access.ts). After the rate limiter, so a
  // limited route counts a request before its caller is checked; before every route.
  installAccessControl(app, opts.access);

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Integrations service',
        description: 'Management API (/v1/projects/{ref}/...), SSO sign-in endpoints (/auth/v1/...) and operations.',
        version: '1.0.0',
      },
      servers: [{ url: opts.publicUrl }],
      components: {
        securitySchemes: {
          ownerToken: { type: 'http', scheme: 'bearer', description: 'An owner token issued by `npm run admin -- issue-token`.' },
          apiKey: { type: 'apiKey', in: 'header', name: 'apikey', description: "The project's anon key." },
          setupLink: { type: 'http', scheme: 'bearer', description: 'The secret of an SSO setup link (the fragment of its URL, `ssl_…`), held by the customer\'s IT admin.' },
        },
      },
    },
  });
  // the API's description is public, like the routes' own documentation
  await app.register(async (docs) => {
    declareScopeAccess(docs, 'public');
    await docs.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  });
  app.get('/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, async () => app.swagger());


  // route template (e.g. /v1/projects/:ref/webhooks), never the raw URL: bounded label values
  app.addHook('onResponse', async (req, reply) => {
    httpRequests.inc({ method: req.method, route: req.routeOptions.url ?? 'unmatched', status: `${Math.floor(reply.statusCode / 100)}xx` });
  });

  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(new ApiError('not_found', `No route for ${req.method} ${req.url.split('?')[0]}.`).toJSON());
  });

  app.setErrorHandler((err: FastifyError | ApiError | Error, req, reply) => {
    if (isApiError(err)) {
      if (err.status >= 500) req.log.error({ err }, 'request failed');
      return reply.code(err.status).send(err.toJSON());
    }
    const fe = err as FastifyError;
    if (fe.validation) {
      const where = fe.validationContext ?? 'request';
      const detail = fe.validation[0];
      const field = detail?.instancePath ? detail.instancePath.replace(/^\//, '').replace(/\//g, '.') : (detail?.params as { missingProperty?: string; additionalProperty?: string })?.missingProperty ?? (detail?.params as { additionalProperty?: string })?.additionalProperty;
      const message = `${where}${field ? `.${field}` : ''} ${detail?.message ?? 'is not valid'}${(detail?.params as { additionalProperty?: string })?.additionalProperty ? ` (${(detail!.params as { additionalProperty: string }).additionalProperty})` : ''}`;
      return reply.code(400).send(new ApiError('validation_failed', message).toJSON());
    }
    const status = fe.statusCode ?? 500;
    if (status < 500) {
      const code =
        fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'unsupported_media_type'
        : fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? 'payload_too_large'
        : fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError ? 'invalid_json'
        : status === 404 ? 'not_found'
        : status === 405 ? 'method_not_allowed'
        : status === 413 ? 'payload_too_large'
        : status === 415 ? 'unsupported_media_type'
        : status === 429 ? 'rate_limited'
        : 'validation_failed';
      const e = new ApiError(code);
      return reply.code(e.status).send(e.toJSON());
    }
    // A database restarting or failing over is not our bug: 503 with Retry-After, and a warning
    // naming what is away rather than an error with a stack.
    if (isDatabaseUnavailable(err)) {
      req.log.warn({ err: err.message }, 'a database this request needs is unavailable; answered 503');
      return reply.code(503).header('retry-after', '5').send(new ApiError('service_unavailable', 'A database this request needs is unavailable (restarting or failing over); try again in a few seconds.').toJSON());
    }
    // Internal: log the cause once, with the request id; the client sees no detail.
    req.log.error({ err }, 'unhandled error');
    return reply.code(500).send(new ApiError('internal_error').toJSON());
  });

  return app;
}
