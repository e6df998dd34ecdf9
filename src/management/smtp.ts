// Custom SMTP settings: PUT/GET/DELETE /v1/projects/{ref}/smtp, for plans with custom_smtp (the
// route guard answers 402 feature_not_in_plan otherwise). The password is write-only: sealed with
// aad.smtpPassword(ref) into smtp_settings.password_enc and shown only as password_set. The host is
// held to the same rule as webhook URLs: a literal private address is refused, since the mailer
// would otherwise connect wherever an owner points it. Configuring SMTP enables the outbox.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { withTransaction } from '../db/index.js';
import { makeAllowList, checkUrlLiteral } from '../outbound/index.js';
import { ApiError } from '../errors.js';
import { aad } from '../lib/secret-box.js';
import { ensureOutboxEnabled } from '../outbox/index.js';
import { recordAudit } from '../projects/index.js';
import { MANAGEMENT_BODY_LIMIT, errorResponses, iso, noQuery, owner, planErrorResponse, refParams, refuseBody, TEXT, timestamp, wellFormed } from '../http/index.js';
import { deleteSmtp, getSmtp, lockSmtpPassword, upsertSmtp, type SmtpRow, type TlsMode } from './smtp-store.js';

type Ctx = Pick<AppContext, 'db' | 'box' | 'cfg' | 'log' | 'projectDbs' | 'connect' | 'topics'>;

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
const IPV6 = /^[0-9A-Fa-f:.]{2,45}$/;
// The same address rule base.send_email applies to recipients.
const EMAIL = "^[^@\\s<>(),;:\"\\u0000-\\u001f\\u007f\\ud800-\\udfff]+@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$";

const body = {
  type: 'object',
  additionalProperties: false,
  required: ['host', 'port', 'sender_email'],
  properties: {
    host: { type: 'string', minLength: 1, maxLength: 253, description: 'host name or IP address' },
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    user: { type: ['string', 'null'], minLength: 1, maxLength: 256, pattern: TEXT },
    password: { type: ['string', 'null'], minLength: 1, maxLength: 1024, description: 'write-only; omit to keep the stored one, null to remove it' },
    sender_email: { type: 'string', maxLength: 254, pattern: EMAIL },
    sender_name: { type: ['string', 'null'], maxLength: 100, pattern: TEXT },
    tls_mode: { type: 'string', enum: ['starttls', 'implicit', 'none'], description: 'default starttls' },
  },
} as const;

interface Body {
  host: string;
  port: number;
  user?: string | null;
  password?: string | null;
  sender_email: string;
  sender_name?: string | null;
  tls_mode?: TlsMode;
}

const view = {
  type: 'object',
  required: ['host', 'port', 'user', 'password_set', 'sender_email', 'sender_name', 'tls_mode', 'created_at', 'updated_at'],
  properties: {
    host: { type: 'string' },
    port: { type: 'integer' },
    user: { type: ['string', 'null'] },
    password_set: { type: 'boolean' },
    sender_email: { type: 'string' },
    sender_name: { type: ['string', 'null'] },
    tls_mode: { type: 'string', enum: ['starttls', 'implicit', 'none'] },
    created_at: timestamp,
    updated_at: timestamp,
  },
} as const;

const toView = (r: SmtpRow) => ({
  host: r.host,
  port: r.port,
  user: r.username,
  password_set: r.has_password,
  sender_email: r.sender_email,
  sender_name: r.sender_name,
  tls_mode: r.tls_mode,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

export function registerSmtp(app: FastifyInstance, ctx: Ctx): void {
  const allow = makeAllowList(ctx.cfg.OUTBOUND_ALLOW_CIDRS);
  const route = { tags: ['smtp'], ...owner, params: refParams, querystring: noQuery };
  const config = { access: 'project-owner' as const, feature: 'custom_smtp' as const };

  function checkHost(host: string): string {
    const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
    const v6 = bare.includes(':');
    if (v6 ? !IPV6.test(bare) : !HOSTNAME.test(bare)) throw new ApiError('validation_failed', 'body.host must be a host name or an IP address, without scheme or port.');
    const check = checkUrlLiteral(`http://${v6 ? `[${bare}]` : bare}/`, allow);
    if (!check.ok) {
      throw check.code === 'url_not_allowed'
        ? new ApiError('url_not_allowed', `The SMTP host is not allowed: ${check.reason}.`)
        : new ApiError('validation_failed', 'body.host must be a host name or an IP address, without scheme or port.');
    }
    return bare;
  }

  app.put<{ Params: { ref: string }; Body: Body }>(
    '/v1/projects/:ref/smtp',
    {
      config,
      bodyLimit: MANAGEMENT_BODY_LIMIT,
      schema: { ...route, summary: 'Set the SMTP server for project email (plan with custom_smtp); 201 created, 200 replaced', body, response: { 200: view, 201: view, ...planErrorResponse, ...errorResponses } },
    },
    async (req, reply) => {
      const refName = req.params.ref;
      const b = req.body;
      const host = checkHost(b.host);
      const user = b.user ?? null;
      if (typeof b.password === 'string' && !wellFormed(b.password)) throw new ApiError('validation_failed', 'body.password must be valid Unicode text.');
      if (!user && typeof b.password === 'string') throw new ApiError('validation_failed', 'body.password needs body.user.');
      await ensureOutboxEnabled(ctx, refName);
      const out = await withTransaction(ctx.db, async (c) => {
        const stored = await lockSmtpPassword(c, refName);
        // Omitted password: keep the stored one (write-only fields cannot be round-tripped by GET).
        const password = !user ? null : b.password === undefined ? stored : b.password === null ? null : ctx.box.seal(b.password, aad.smtpPassword(refName));
        if (user && !password) throw new ApiError('validation_failed', 'body.user needs a password: none is stored, send body.password.');
        const created = await upsertSmtp(c, refName, {
          host,
          port: b.port,
          username: user,
          passwordSealed: password,
          sender_email: b.sender_email,
          sender_name: b.sender_name ?? null,
          tls_mode: b.tls_mode ?? 'starttls',
        });
        const passwordChange = !password ? (stored ? 'removed' : 'none') : b.password === undefined ? 'kept' : 'set';
        await recordAudit(c, req, refName, { action: 'smtp.put', resourceType: 'smtp_settings', details: { host, port: b.port, tls_mode: b.tls_mode ?? 'starttls', password: passwordChange } });
        return { created, row: (await getSmtp(c, refName))! };
      });
      return reply.code(out.created ? 201 : 200).send(toView(out.row));
    },
  );

  app.get<{ Params: { ref: string } }>(
    '/v1/projects/:ref/smtp',
    { config, preValidation: refuseBody, schema: { ...route, summary: 'The SMTP settings (the password never, only password_set)', response: { 200: view, ...planErrorResponse, ...errorResponses } } },
    async (req) => {
      const row = await getSmtp(ctx.db, req.params.ref);
      if (!row) throw new ApiError('smtp_not_configured');
      return toView(row);
    },
  );

  app.delete<{ Params: { ref: string } }>(
    '/v1/projects/:ref/smtp',
    { config, preValidation: refuseBody, schema: { ...route, summary: 'Remove the SMTP settings: mail goes through the platform default again', response: { 204: { type: 'null', description: 'removed' }, ...planErrorResponse, ...errorResponses } } },
    async (req, reply) => {
      const refName = req.params.ref;
      await withTransaction(ctx.db, async (c) => {
        if (!(await deleteSmtp(c, refName))) throw new ApiError('smtp_not_configured');
        await recordAudit(c, req, refName, { action: 'smtp.delete', resourceType: 'smtp_settings' });
      });
      return reply.code(204).send();
    },
  );
}
