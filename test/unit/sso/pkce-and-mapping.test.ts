import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { mapOidcClaims } from '../../../src/sso/sign-in/attribute-mapping.js';
import { normalizeChallengeMethod, verifyCodeVerifier } from '../../../src/sso/sign-in/pkce.js';
import { initialUserMetadata } from '../../../src/sso/sign-in/user-resolution.js';

describe('PKCE', () => {
  const verifier = 'a'.repeat(20) + '-._~' + 'B'.repeat(30);
  const s256 = createHash('sha256').update(verifier).digest('base64url');

  it('verifies S256 and plain challenges', () => {
    expect(verifyCodeVerifier(verifier, s256, 's256')).toBe(true);
    expect(verifyCodeVerifier(verifier, verifier, 'plain')).toBe(true);
    expect(verifyCodeVerifier(verifier + 'x', s256, 's256')).toBe(false);
    expect(verifyCodeVerifier(verifier, s256, 'plain')).toBe(false);
    expect(verifyCodeVerifier('short', createHash('sha256').update('short').digest('base64url'), 's256')).toBe(false);
  });

  it("accepts auth-js's method names", () => {
    expect(normalizeChallengeMethod('s256')).toBe('s256');
    expect(normalizeChallengeMethod('S256')).toBe('s256');
    expect(normalizeChallengeMethod('plain')).toBe('plain');
    expect(normalizeChallengeMethod('md5')).toBeNull();
  });
});

describe('OIDC attribute mapping', () => {
  const claims = { sub: 's-1', email: 'Ann@Acme.test', email_verified: 'true', name: 'Ann', picture: 'https://p', given_name: 'A', family_name: 'N', dept: 'Ops', upn: 'ann@corp' };

  it('uses the default OIDC mapping (docs/sso.md, attribute_mapping)', () => {
    expect(mapOidcClaims(claims)).toMatchObject({ subject: 's-1', email: 'ann@acme.test', email_verified: true, name: 'Ann', image: 'https://p', first_name: 'A', last_name: 'N', extra: {} });
  });

  it('follows the mapping and copies extra claims', () => {
    const m = mapOidcClaims(claims, { email: 'upn', name: 'given_name', extra: { department: 'dept', missing: 'nope', proto: 'constructor' } });
    expect(m).toMatchObject({ email: 'ann@corp', name: 'A', extra: { department: 'Ops' } });
    expect(Object.keys(m.extra)).toEqual(['department']);
  });

  it('treats anything but true as unverified', () => {
    expect(mapOidcClaims({ ...claims, email_verified: 'yes' }).email_verified).toBe(false);
    expect(mapOidcClaims({ sub: 'x' })).toMatchObject({ email: null, email_verified: false });
  });

  it('builds user_metadata from the profile and extra (extra wins)', () => {
    const m = mapOidcClaims(claims, { extra: { name: 'dept' } });
    expect(initialUserMetadata(m, { trust_email: false })).toMatchObject({ sub: 's-1', email: 'ann@acme.test', name: 'Ops', full_name: 'Ann', first_name: 'A', picture: 'https://p' });
  });
});
