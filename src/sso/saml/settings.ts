// Where a SAML provider lives on our side, and what the SAML core needs to know about it.
//
// Every provider is its own service provider: its entity ID is its metadata URL and it has its
// own ACS, both carrying the provider id. An assertion minted for one provider's SP therefore
// names an audience no other provider accepts, even when two providers trust the same IdP.
import { X509Certificate } from 'node:crypto';
import { authBaseUrl } from '../auth-project.js';
import type { IdpMetadata, SpConfig } from './core/index.js';
import type { ProviderRow, SsoContext } from '../types.js';

type Cfg = Pick<SsoContext, 'cfg'>;

export const spMetadataUrl = (ctx: Cfg, ref: string, providerId: string) => `${authBaseUrl(ctx, ref)}/sso/saml/metadata/${providerId}`;
export const acsUrl = (ctx: Cfg, ref: string, providerId: string) => `${authBaseUrl(ctx, ref)}/sso/saml/acs/${providerId}`;

export function spConfig(ctx: Cfg, provider: Pick<ProviderRow, 'id' | 'project_ref'>): SpConfig {
  return { entityId: spMetadataUrl(ctx, provider.project_ref, provider.id), acsUrl: acsUrl(ctx, provider.project_ref, provider.id) };
}

/** The IdP as stored at the last metadata read; null if the row was never completed. */
export function storedIdp(provider: ProviderRow): IdpMetadata | null {
  if (!provider.idp_entity_id || !provider.idp_sso_url || !provider.idp_signing_certs?.length) return null;
  return { entityId: provider.idp_entity_id, ssoRedirectUrl: provider.idp_sso_url, signingCerts: provider.idp_signing_certs };
}

/** What the owner sees of each signing certificate: enough to tell which keys are trusted during a rotation. */
export function describeCerts(certs: string[]): { sha256_fingerprint: string; subject: string; not_after: string }[] {
  return certs.map((b64) => {
    const c = new X509Certificate(Buffer.from(b64, 'base64'));
    return { sha256_fingerprint: c.fingerprint256, subject: c.subject, not_after: new Date(c.validTo).toISOString() };
  });
}
