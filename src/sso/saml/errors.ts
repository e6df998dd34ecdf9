// One error type for the SAML core so the HTTP layer can map failures without parsing messages.
// The codes are the client-visible ones from the service spec (section 7 and the provider errors);
// the message is a human-readable reason meant for logs and operators, never for the browser,
// because it can describe what a forged response got wrong.

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
