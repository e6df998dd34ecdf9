// PKCE (RFC 7636) between the client and this service: the client keeps the verifier, /sso stores
// the challenge, and /token?grant_type=pkce proves the same client finishes the flow.
import { createHash } from 'node:crypto';
import { safeEqual } from '../../lib/tokens.js';

export type ChallengeMethod = 's256' | 'plain';

/** auth-js sends "s256" (or "plain" without WebCrypto); RFC 7636 spells it "S256". */
export function normalizeChallengeMethod(method: string | null | undefined): ChallengeMethod | null {
  const m = (method ?? 's256').toLowerCase();
  return m === 's256' || m === 'plain' ? m : null;
}

// RFC 7636 4.1/4.2: 43-128 characters from the unreserved set.
const PKCE_VALUE = /^[A-Za-z0-9._~-]{43,128}$/;

export function isValidPkceValue(value: string): boolean {
  return PKCE_VALUE.test(value);
}

export function verifyCodeVerifier(verifier: string, challenge: string, method: ChallengeMethod): boolean {
  if (!isValidPkceValue(verifier)) return false;
  const derived = method === 's256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  return safeEqual(derived, challenge);
}
