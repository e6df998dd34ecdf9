// Shared cast for the SAML unit tests: one SP, one test IdP publishing the primary key, and the
// expectations an ACS handler would pass for a pending request.
import { parseIdpMetadata } from '../../../src/sso/saml/core/metadata.js';
import type { AcsExpectations } from '../../../src/sso/saml/core/verify-response.js';
import { assertSchemaValid } from '../../../src/sso/saml/core/schema.js';
import { TestIdp, type ResponseOptions } from '../../helpers/saml-idp.js';

export const sp = { entityId: 'https://auth.example.com/sso/saml/metadata/p1', acsUrl: 'https://auth.example.com/sso/saml/acs/p1' };
export const testIdp = new TestIdp();
export const idpMetadata = parseIdpMetadata(testIdp.metadataXml());
export const requestId = '_a1b2c3d4e5f60718293a4b5c6d7e8f90';
export const userEmail = 'alice@corp.example';

export function expectations(overrides: Partial<AcsExpectations> = {}): AcsExpectations {
  return { sp, idp: idpMetadata, requestId, clockSkewMs: 60_000, ...overrides };
}

export function responseOptions(overrides: Partial<ResponseOptions> = {}): ResponseOptions {
  return {
    sp,
    requestId,
    nameId: userEmail,
    attributes: { email: [userEmail], givenName: ['Alice'], surname: ['Liddell'], groups: ['eng', 'admins'] },
    ...overrides,
  };
}

export const b64 = (xml: string) => Buffer.from(xml).toString('base64');

/** The first schema validation compiles xmllint's WebAssembly module (seconds on a slow runner). */
export async function warmUpSchemaValidator(): Promise<void> {
  await assertSchemaValid('<warm-up/>').catch(() => undefined);
}
