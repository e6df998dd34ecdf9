// SAML providers: the metadata fields on save (metadata_url downloaded, or metadata_xml pasted;
// either must name a signing certificate), PATCH refresh_metadata for certificate rotation, the
// test endpoint, the SP fields of the response, and the start of a sign-in (an unsigned
// AuthnRequest over HTTP-Redirect whose ID and RelayState are kept in the flow).
import { ApiError } from '../../errors.js';
import { randomToken, sha256 } from '../../lib/tokens.js';
import { buildAuthnRequestRedirect, type IdpMetadata } from './core/index.js';
import { checkMetadataUrl, downloadMetadata, parseMetadata } from './metadata-source.js';
import { registerSamlRoutes } from './routes.js';
import { acsUrl, describeCerts, spConfig, spMetadataUrl, storedIdp } from './settings.js';
import type { KindColumns, ProviderInput, ProviderKind, ProviderRow, SsoContext } from '../types.js';

const idpColumns = (idp: IdpMetadata): KindColumns => ({ idp_entity_id: idp.entityId, idp_sso_url: idp.ssoRedirectUrl, idp_signing_certs: idp.signingCerts });

/** The metadata source and what it said; `null` when the PATCH leaves the metadata alone. */
async function readSource(ctx: SsoContext, input: ProviderInput, existing?: ProviderRow): Promise<KindColumns | null> {
  if (input.metadata_url !== undefined && input.metadata_xml !== undefined) {
    throw new ApiError('validation_failed', 'Send either metadata_url or metadata_xml, not both.');
  }
  if (input.refresh_metadata && input.metadata_xml !== undefined) {
    throw new ApiError('validation_failed', 'refresh_metadata re-reads metadata_url; with metadata_xml, the pasted XML is the new metadata.');
  }
  if (input.metadata_xml !== undefined) {
    return { metadata_url: null, metadata_xml: input.metadata_xml, ...idpColumns(parseMetadata(input.metadata_xml)) };
  }
  const url = input.metadata_url !== undefined ? checkMetadataUrl(ctx, input.metadata_url) : input.refresh_metadata ? existing?.metadata_url : undefined;
  if (input.refresh_metadata && !url) {
    throw new ApiError('validation_failed', 'refresh_metadata needs a metadata_url; this provider was set up with metadata_xml, so send the new metadata_xml instead.');
  }
  if (url) return { metadata_url: url, metadata_xml: null, ...idpColumns((await downloadMetadata(ctx, url)).idp) };
  if (!existing) throw new ApiError('validation_failed', 'A saml provider needs metadata_url or metadata_xml.');
  return null;
}

export const samlKind: ProviderKind = {
  kind: 'saml',
  fields: ['metadata_url', 'metadata_xml', 'refresh_metadata'],

  async prepare(ctx, _providerId, input, existing) {
    return (await readSource(ctx, input, existing)) ?? {};
  },

  async test(ctx, provider) {
    const base = { kind: 'saml', metadata_url: provider.metadata_url };
    try {
      // Pasted metadata has nowhere to be downloaded from; re-parsing it still shows what is trusted.
      const idp = provider.metadata_url ? (await downloadMetadata(ctx, provider.metadata_url)).idp : parseMetadata(provider.metadata_xml ?? '');
      const stored = storedIdp(provider);
      const same = (a: string[], b: string[]) => a.length === b.length && a.every((c) => b.includes(c));
      return {
        ok: true,
        ...base,
        idp_entity_id: idp.entityId,
        idp_sso_url: idp.ssoRedirectUrl,
        idp_signing_certificates: describeCerts(idp.signingCerts),
        // tells the owner whether a refresh_metadata would change what is trusted
        matches_stored:
          !!stored && stored.entityId === idp.entityId && stored.ssoRedirectUrl === idp.ssoRedirectUrl && same(stored.signingCerts, idp.signingCerts),
        problem: null,
      };
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      return { ok: false, ...base, problem: { code: e.code, message: e.message } };
    }
  },

  present(ctx, provider) {
    return {
      metadata_url: provider.metadata_url,
      metadata_xml: provider.metadata_xml,
      idp_entity_id: provider.idp_entity_id,
      idp_sso_url: provider.idp_sso_url,
      idp_signing_certificates: describeCerts(provider.idp_signing_certs ?? []),
      sp_entity_id: spMetadataUrl(ctx, provider.project_ref, provider.id),
      sp_metadata_url: spMetadataUrl(ctx, provider.project_ref, provider.id),
      acs_url: acsUrl(ctx, provider.project_ref, provider.id),
    };
  },

  async start(ctx, { provider }) {
    const idp = storedIdp(provider);
    if (!idp) throw new ApiError('sso_failed', 'The SAML provider has no usable IdP metadata; its owner must set it again.');
    // 32 random bytes, 43 characters: well within the 80 bytes the binding allows for RelayState.
    const relayState = randomToken('', 32);
    const { url, requestId } = buildAuthnRequestRedirect(spConfig(ctx, provider), idp, relayState);
    return { url, flow: { saml_request_id: requestId, relay_state_hash: sha256(relayState) } };
  },

  registerRoutes(app, ctx) {
    registerSamlRoutes(app, ctx);
  },
};
