// A project's access-token signing keys (ES256), and their rotation:
//
//   GET  /v1/projects/{ref}/auth/signing-keys          the current key and the rotated-out ones
//   POST /v1/projects/{ref}/auth/signing-keys/rotate   a new current key
//
// Rotation makes a new key pair the signer at once. The previous public key stays in the JWKS and
// keeps verifying for ACCESS_TOKEN_TTL (+ 1 minute of clock skew): exactly as long as a token it
// signed can still be valid, so no signed-in user is logged out and a resource server that caches
// the JWKS finds the new key before the first token it signs reaches it... as long as it refreshes
// its cache by kid (supabase-js and jose do). Sessions themselves (refresh tokens) are not touched:
// the next refresh returns a token signed by the new key. The previous private key is discarded.
import type { FastifyInstance } from 'fastify';
import type { JWK } from 'jose';
import { withTransaction, type PoolClient } from '../../db/index.js';
import { errorSchema, noQuery, refParams, refuseBody } from '../../http/index.js';
import { newSigningKey, recordAudit } from '../../projects/index.js';
import type { AuthProject, PreviousKey, SsoContext } from '../types.js';
import { lockSigningKeys, setSigningKeys, signingKeys } from './signing-key-store.js';

/** The keys a token of this project may be verified with now: the current one and unexpired previous ones. */
export function verificationKeys(project: Pick<AuthProject, 'jwt_public_jwk' | 'jwt_previous_keys'>, now = Date.now()): JWK[] {
  return [project.jwt_public_jwk as JWK, ...livePrevious(project.jwt_previous_keys, now).map((k) => k.jwk)];
}

function livePrevious(keys: PreviousKey[] | null | undefined, now: number): PreviousKey[] {
  return (keys ?? []).filter((k) => Date.parse(k.valid_until) > now);
}

const SKEW_MS = 60_000;

/** Makes a new key the signer; call inside a transaction (`q` is its client). */
export async function rotateSigningKey(ctx: Pick<SsoContext, 'box' | 'cfg'>, q: PoolClient, ref: string): Promise<{ kid: string; previous: PreviousKey }> {
  const next = await newSigningKey();
  const row = (await lockSigningKeys(q, ref))!;
  const now = Date.now();
  const previous: PreviousKey = {
    jwk: row.jwt_public_jwk,
    retired_at: new Date(now).toISOString(),
    valid_until: new Date(now + ctx.cfg.ACCESS_TOKEN_TTL + SKEW_MS).toISOString(),
  };
  await setSigningKeys(q, ref, { kid: next.kid, privateJwkSealed: next.privateJwkSealed(ctx.box, ref), publicJwk: next.publicJwk, previous: [previous, ...livePrevious(row.jwt_previous_keys, now)] });
  return { kid: next.kid, previous };
}

const keyView = {
  type: 'object',
  required: ['kid', 'status', 'retired_at', 'valid_until', 'public_jwk'],
  properties: {
    kid: { type: 'string' },
    status: { type: 'string', enum: ['current', 'previous'] },
    retired_at: { type: ['string', 'null'], format: 'date-time' },
    valid_until: { type: ['string', 'null'], format: 'date-time', description: 'previous keys verify tokens until then; null for the current key' },
    public_jwk: { type: 'object', additionalProperties: true },
  },
} as const;
const keysView = { type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: keyView } } } as const;

async function listKeys(ctx: SsoContext, ref: string) {
  const row = (await signingKeys(ctx.db, ref))!;
  return {
    keys: [
      { kid: row.jwt_kid, status: 'current', retired_at: null, valid_until: null, public_jwk: row.jwt_public_jwk },
      ...livePrevious(row.jwt_previous_keys, Date.now()).map((k) => ({ kid: k.jwk.kid, status: 'previous', retired_at: k.retired_at, valid_until: k.valid_until, public_jwk: k.jwk })),
    ],
  };
}

export async function registerSigningKeyRoutes(app: FastifyInstance, ctx: SsoContext): Promise<void> {
  const base = '/v1/projects/:ref/auth/signing-keys';
  const common = { tags: ['auth'], security: [{ ownerToken: [] }] };
  const errors = { 401: errorSchema, 404: errorSchema };

  app.get<{ Params: { ref: string } }>(
    base,
    { config: { access: 'project-owner' }, preValidation: refuseBody, schema: { ...common, summary: "The project's access-token signing keys (public parts only)", params: refParams, querystring: noQuery, response: { 200: keysView, ...errors } } },
    async (req) => listKeys(ctx, req.params.ref),
  );

  app.post<{ Params: { ref: string } }>(
    `${base}/rotate`,
    {
      config: { access: 'project-owner' },
      preValidation: refuseBody,
      schema: {
        ...common,
        summary: 'Rotate the signing key: a new key signs from now on; the previous one keeps verifying for ACCESS_TOKEN_TTL',
        params: refParams,
        querystring: noQuery,
        response: { 200: keysView, ...errors },
      },
    },
    async (req) => {
      const ref = req.params.ref;
      const { kid, previous } = await withTransaction(ctx.db, async (c) => {
        const rotated = await rotateSigningKey(ctx, c, ref);
        await recordAudit(c, req, ref, {
          action: 'auth.signing_key.rotate',
          resourceType: 'signing_key',
          resourceId: rotated.kid,
          details: { previous_kid: rotated.previous.jwk.kid, previous_valid_until: rotated.previous.valid_until },
        });
        return rotated;
      });
      req.log.info({ project: ref, kid, previous_kid: previous.jwk.kid }, 'access-token signing key rotated');
      return listKeys(ctx, ref);
    },
  );
}
