// One error type for the SAML core so the HTTP layer can map failures without parsing messages.
// The codes are client-visible ones (docs/sso-saml.md, "Errors"; docs/errors.md);
// the message is a fixed, human-readable reason (it never quotes the document beyond URI-safe
// status codes and element names), so the ACS can pass it on as error_description for the IdP
// admin debugging a setup. Telling a forger which check failed gains them nothing: every check
// must pass, and none can be passed without the IdP's key.

export type SamlErrorCode = 'saml_metadata_invalid' | 'saml_metadata_no_signing_cert' | 'invalid_saml_response';

export class SamlError extends Error {
  override readonly name = 'SamlError';
  constructor(
    readonly code: SamlErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export const isSamlError = (e: unknown): e is SamlError => e instanceof SamlError;
