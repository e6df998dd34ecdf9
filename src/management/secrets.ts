// Write-only project secrets: /v1/projects/{ref}/secrets[/{NAME}]. Values are sealed with
// AES-256-GCM under the master key, the project and the name bound as associated data; they are
// read back only by the dispatcher, in memory, to fill {{secret:NAME}} placeholders at send time.
// No response, log line, audit entry or error message holds a value.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { withTransaction } from '../db/index.js';
import { ApiError } from '../errors.js';
import { aad } from '../lib/secret-box.js';
import { recordAudit } from '../projects/index.js';
import { SECRET_BODY_LIMIT, errorResponses, iso, noQuery, owner, ref, refParams, refuseBody, timestamp, wellFormed } from '../http/index.js';
import { deleteSecret, listSecrets, upsertSecret, type SecretMeta } from './secret-store.js';

export const SECRET_VALUE_MAX_BYTES = 16 * 1024;

const nameParams = {
  type: 'object',
  additionalProperties: false,
  required: ['ref', 'name'],
  properties: { ref, name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$', description: 'case-sensitive' } },
} as const;

const meta = {
  type: 'object',
  required: ['name', 'created_at', 'updated_at'],
  properties: { name: { type: 'string' }, created_at: timestamp, updated_at: timestamp },
} as const;

const toMeta = (r: SecretMeta) => ({ name: r.name, created_at: iso(r.created_at), updated_at: iso(r.updated_at) });

export function registerSecrets(app: FastifyInstance, ctx: Pick<AppContext, 'db' | 'box'>): void {
  const tag = { tags: ['secrets'], ...owner };

  app.put<{ Params: { ref: string; name: string }; Body: { value: string } }>(
    '/v1/projects/:ref/secrets/:name',
    {
      config: { access: 'project-owner' },
      bodyLimit: SECRET_BODY_LIMIT,
      schema: {
        ...tag,
        summary: 'Create (201) or replace (200) a secret; the value is never returned',
        params: nameParams,
        querystring: noQuery,
        body: { type: 'object', additionalProperties: false, required: ['value'], properties: { value: { type: 'string', description: 'at most 16 KB in UTF-8' } } },
        response: { 200: meta, 201: meta, ...errorResponses },
      },
    },
    async (req, reply) => {
      const { ref: refName, name } = req.params;
      const { value } = req.body;
      if (!wellFormed(value)) throw new ApiError('validation_failed', 'body.value must be valid Unicode text (it has an unpaired surrogate).');
      if (Buffer.byteLength(value, 'utf8') > SECRET_VALUE_MAX_BYTES) {
        throw new ApiError('validation_failed', `body.value is larger than ${SECRET_VALUE_MAX_BYTES} bytes (16 KB, counted in UTF-8).`);
      }
      const row = await withTransaction(ctx.db, async (c) => {
        const saved = await upsertSecret(c, refName, name, ctx.box.seal(value, aad.secret(refName, name)));
        await recordAudit(c, req, refName, { action: saved.created ? 'secret.create' : 'secret.replace', resourceType: 'secret', resourceId: name });
        return saved;
      });
      return reply.code(row.created ? 201 : 200).send(toMeta(row));
    },
  );

  app.get<{ Params: { ref: string } }>(
    '/v1/projects/:ref/secrets',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: { ...tag, summary: 'Secret names and timestamps (never values)', params: refParams, querystring: noQuery, response: { 200: { type: 'array', items: meta }, ...errorResponses } },
    },
    async (req) => (await listSecrets(ctx.db, req.params.ref)).map(toMeta),
  );

  app.delete<{ Params: { ref: string; name: string } }>(
    '/v1/projects/:ref/secrets/:name',
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: { ...tag, summary: 'Delete a secret (204), or 404 secret_not_found', params: nameParams, querystring: noQuery, response: { 204: { type: 'null', description: 'deleted' }, ...errorResponses } },
    },
    async (req, reply) => {
      const { ref: refName, name } = req.params;
      await withTransaction(ctx.db, async (c) => {
        if (!(await deleteSecret(c, refName, name))) throw new ApiError('secret_not_found');
        await recordAudit(c, req, refName, { action: 'secret.delete', resourceType: 'secret', resourceId: name });
      });
      return reply.code(204).send();
    },
  );
}
