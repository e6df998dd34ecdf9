// Access tokens: ES256 JWTs signed with the project's own key (created with the project; the
// private JWK is sealed in the control DB), with the claims @supabase/auth-js and PostgREST-style
// consumers read. The public key, and rotated-out ones still within their validity
// (signing-keys.ts), are served as the project's JWKS.
import { createLocalJWKSet, importJWK, jwtVerify, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { ApiError } from '../../errors.js';
import { aad } from '../../lib/secret-box.js';
import { authBaseUrl } from '../auth-project.js';
import { verificationKeys } from './signing-keys.js';
import type { AuthProject, SsoContext } from '../types.js';

const keys = new Map<string, Promise<CryptoKey>>();

function privateKey(ctx: Pick<SsoContext, 'box'>, project: AuthProject): Promise<CryptoKey> {
  const cacheKey = `${project.ref}:${project.jwt_kid}`;
  let key = keys.get(cacheKey);
  if (!key) {
    key = importJWK(JSON.parse(ctx.box.open(project.jwt_private_jwk_enc, aad.jwtKey(project.ref))), 'ES256') as Promise<CryptoKey>;
    keys.set(cacheKey, key);
  }
  return key;
}

export interface AccessTokenClaims extends JWTPayload {
  sub: string;
  session_id: string;
  email: string;
  role: string;
}

export interface TokenSubject {
  user: { id: string; email: string | null; app_metadata: unknown; user_metadata: unknown };
  sessionId: string;
  amr: { method: string; timestamp: number }[];
}

export async function signAccessToken(ctx: Pick<SsoContext, 'box' | 'cfg'>, project: AuthProject, s: TokenSubject): Promise<{ token: string; expiresAt: number; expiresIn: number }> {
  const iat = Math.floor(Date.now() / 1000);
  const expiresIn = Math.floor(ctx.cfg.ACCESS_TOKEN_TTL / 1000);
  const token = await new SignJWT({
    email: s.user.email ?? '',
    phone: '',
    app_metadata: s.user.app_metadata,
    user_metadata: s.user.user_metadata,
    role: 'authenticated',
    aal: 'aal1',
    amr: s.amr,
    session_id: s.sessionId,
    is_anonymous: false,
  })
    .setProtectedHeader({ alg: 'ES256', kid: project.jwt_kid, typ: 'JWT' })
    .setIssuer(authBaseUrl(ctx, project.ref))
    .setSubject(s.user.id)
    .setAudience('authenticated')
    .setIssuedAt(iat)
    .setExpirationTime(iat + expiresIn)
    .sign(await privateKey(ctx, project));
  return { token, expiresAt: iat + expiresIn, expiresIn };
}

/** Verifies a bearer access token of this project; bad_jwt when it is not one (or expired). */
export async function verifyAccessToken(ctx: Pick<SsoContext, 'cfg'>, project: AuthProject, token: string): Promise<AccessTokenClaims> {
  try {
    // the current key or a rotated-out one still within its validity, chosen by the token's kid
    const keys = createLocalJWKSet({ keys: verificationKeys(project) });
    const { payload } = await jwtVerify(token, keys, { issuer: authBaseUrl(ctx, project.ref), audience: 'authenticated', algorithms: ['ES256'] });
    if (typeof payload.sub !== 'string' || typeof payload.session_id !== 'string') throw new Error('missing sub or session_id');
    return payload as AccessTokenClaims;
  } catch {
    throw new ApiError('bad_jwt');
  }
}

export function bearerToken(header: string | undefined): string {
  const m = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header.trim()) : null;
  if (!m) throw new ApiError('bad_jwt', 'An access token is required (Authorization: Bearer <token>).');
  return m[1];
}

export const jwks = (project: AuthProject) => ({ keys: verificationKeys(project) });
