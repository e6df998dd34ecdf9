// Reading the development mail sink over HTTP: GET /dev/mail lists caught messages (newest first),
// GET /dev/mail/{id} returns one with its text and HTML, GET /dev/mail/{id}/html shows the HTML as
// a page. Registered only when the sink is enabled, so never with APP_ENV=production.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorSchema, uuid } from '../http/index.js';
import { devMailSinkOf, type CaughtMail } from './dev-sink.js';

const idParam = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: { id: uuid },
} as const;

const summary = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    received_at: { type: 'string' },
    from: { type: ['string', 'null'] },
    to: { type: ['string', 'null'] },
    subject: { type: ['string', 'null'] },
    url: { type: 'string' },
  },
} as const;

const full = {
  type: 'object',
  properties: {
    ...summary.properties,
    envelope: { type: 'object', properties: { from: { type: ['string', 'null'] }, to: { type: 'array', items: { type: 'string' } } } },
    message_id: { type: ['string', 'null'] },
    text: { type: ['string', 'null'] },
    html: { type: ['string', 'null'] },
    html_url: { type: ['string', 'null'] },
    size: { type: 'integer' },
  },
} as const;

// Public on purpose, and only in development: registered only while the development mail sink runs
// (never in production), for the developer reading what the service sent.
export function registerDevMail(app: FastifyInstance, ctx: Pick<AppContext, 'cfg'>): void {
  const base = `${ctx.cfg.publicUrl}/dev/mail`;
  const find = (id: string): CaughtMail => {
    const mail = devMailSinkOf(ctx)?.get(id);
    if (!mail) throw new ApiError('not_found', 'No caught message with that id (the sink keeps the latest 200, in memory).');
    return mail;
  };

  app.get(
    '/dev/mail',
    {
      config: { access: 'public' },
      schema: {
        tags: ['development'],
        summary: 'Messages caught by the development mail sink, newest first',
        querystring: { type: 'object', additionalProperties: false, properties: { to: { type: 'string', maxLength: 320 } } },
        response: { 200: { type: 'object', properties: { sink: { type: ['string', 'null'] }, messages: { type: 'array', items: summary } } } },
      },
    },
    async (req) => {
      const { to } = req.query as { to?: string };
      const sink = devMailSinkOf(ctx);
      const messages = (sink?.list() ?? [])
        .filter((m) => !to || m.envelope.to.some((r) => r.toLowerCase() === to.toLowerCase()))
        .map((m) => ({ id: m.id, received_at: m.received_at, from: m.from, to: m.to, subject: m.subject, url: `${base}/${m.id}` }));
      return { sink: sink ? `smtp://127.0.0.1:${sink.port}` : null, messages };
    },
  );

  app.get(
    '/dev/mail/:id',
    { config: { access: 'public' }, schema: { tags: ['development'], summary: 'One caught message with its text and HTML', params: idParam, response: { 200: full, 404: errorSchema } } },
    async (req) => {
      const m = find((req.params as { id: string }).id);
      return { ...m, url: `${base}/${m.id}`, html_url: m.html ? `${base}/${m.id}/html` : null };
    },
  );

  app.get(
    '/dev/mail/:id/html',
    { config: { access: 'public' }, schema: { tags: ['development'], summary: 'The HTML part of a caught message, as a page', params: idParam, response: { 404: errorSchema } } },
    async (req, reply) => {
      const m = find((req.params as { id: string }).id);
      if (!m.html) throw new ApiError('not_found', 'That message has no HTML part.');
      // The HTML is whatever some SQL sent: shown sandboxed so its scripts never run on this origin.
      return reply.header('content-security-policy', 'sandbox').type('text/html; charset=utf-8').send(m.html);
    },
  );
}
