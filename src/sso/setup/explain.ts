// Plain-words explanations of a failed test sign-in, for the customer's IT admin on the setup page:
// which check failed, what it means, and what to change at the IdP. The SAML core's refusals are
// fixed texts (saml/core/), so they are matched here by pattern; OIDC failures come from
// openid-client (and the IdP's own error codes). The technical reason is always kept beside the
// explanation, so nothing is hidden from an admin who wants the exact check.

export type CheckName =
  | 'audience'
  | 'recipient'
  | 'destination'
  | 'signature'
  | 'clock'
  | 'issuer'
  | 'nameid'
  | 'status'
  | 'encryption'
  | 'email_missing'
  | 'domain'
  | 'domain_other_provider'
  | 'in_response_to'
  | 'idp_refused'
  | 'idp_request'
  | 'client'
  | 'token'
  | 'other';

export interface Explanation {
  check: CheckName;
  /** one line: what failed */
  title: string;
  /** what to change at the IdP */
  fix: string;
  /**
   * the service's exact reason (no secrets, no document contents), except for the service's own
   * requests to the IdP: no network detail there (explainIdpRequest)
   */
  detail: string;
}

export interface SetupValues {
  acsUrl?: string;
  spEntityId?: string;
  redirectUri?: string;
  domains?: string[];
}

type Rule = [RegExp, (v: SetupValues) => Omit<Explanation, 'detail'>];

const SAML_RULES: Rule[] = [
  [/Audience is not our SP entity ID|no AudienceRestriction/, (v) => ({
    check: 'audience',
    title: 'The assertion is meant for another service (audience).',
    fix: `Set the Audience / "Audience URI (SP Entity ID)" / "Identifier" of the application at your IdP to exactly ${v.spEntityId ?? 'the SP entity ID shown above'}.`,
  })],
  [/Recipient is not our ACS URL/, (v) => ({
    check: 'recipient',
    title: 'The assertion names another address as its recipient.',
    fix: `Set the "Single sign-on URL" / "ACS URL" / "Reply URL" at your IdP to exactly ${v.acsUrl ?? 'the ACS URL shown above'} (Recipient and Destination come from it).`,
  })],
  [/Destination is not our ACS URL/, (v) => ({
    check: 'destination',
    title: 'The response was addressed to another URL (Destination).',
    fix: `Set the "Single sign-on URL" / "ACS URL" at your IdP to exactly ${v.acsUrl ?? 'the ACS URL shown above'}.`,
  })],
  [/encrypted/, () => ({
    check: 'encryption',
    title: 'The assertion (or part of it) is encrypted.',
    fix: 'Turn assertion encryption off for this application: our metadata publishes no encryption key; the connection is already protected by HTTPS.',
  })],
  [/assertion is not signed/, () => ({
    check: 'signature',
    title: 'The assertion is not signed (only the response is).',
    fix: 'Set the IdP to sign the assertion ("Sign assertion" or "Sign response and assertion"), with RSA-SHA256.',
  })],
  [/signature/i, () => ({
    check: 'signature',
    title: 'The signature does not check out against the IdP certificate we have.',
    fix: 'Make sure the metadata you entered is the current one for this application (it holds the signing certificate); if the IdP rotated its certificate, enter the metadata again. Use RSA-SHA256 or RSA-SHA512, not SHA-1.',
  })],
  [/not yet valid|has expired/, () => ({
    check: 'clock',
    title: "The assertion's validity window does not include the current time (clock skew).",
    fix: "Check that the IdP server's clock is correct (synchronised with NTP), and that the assertion lifetime is at least a few minutes; a difference of up to two minutes is tolerated.",
  })],
  [/Issuer is not (an entity ID|the IdP entity ID)/, () => ({
    check: 'issuer',
    title: 'The response comes from another IdP entity ID than the metadata names.',
    fix: "Enter the metadata of this very application (its entity ID must match the Issuer the IdP sends), or re-read it if the IdP's entity ID changed.",
  })],
  [/NameID/, () => ({
    check: 'nameid',
    title: "The NameID is not the user's email address.",
    fix: 'Set the NameID format to urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress and its value to the user\'s email address.',
  })],
  [/did not report success/, () => ({
    check: 'status',
    title: 'The IdP refused the sign-in itself.',
    fix: 'Check at the IdP that the user you signed in with is assigned to this application, and look at the IdP\'s own sign-in log for the reason.',
  })],
  [/InResponseTo|unknown or was already used|expired; start again/, () => ({
    check: 'in_response_to',
    title: 'The answer does not belong to the test sign-in that was started (IdP-initiated or replayed).',
    fix: 'Start the test from this page with "Test sign-in" (signing in from the IdP\'s app dashboard is not supported), and do not reload the IdP\'s page.',
  })],
];

const fallback = (detail: string): Explanation => ({
  check: 'other',
  title: 'The answer from the IdP did not validate.',
  fix: 'Compare the values at your IdP with the ones shown on this page; the exact reason is below.',
  detail,
});

/** A SAML core refusal (its message) in plain words. */
export function explainSaml(reason: string, v: SetupValues = {}): Explanation {
  for (const [re, make] of SAML_RULES) if (re.test(reason)) return { ...make(v), detail: reason };
  return fallback(reason);
}

/** An OIDC failure (the reason oidc/callback.ts describes, and the IdP's error code if any). */
export function explainOidc(reason: string, idpError: string | undefined, v: SetupValues = {}): Explanation {
  if (idpError === 'access_denied') {
    return { check: 'idp_refused', title: 'The sign-in was cancelled or refused at the IdP.', fix: 'Sign in again and consent; check at the IdP that your user is assigned to this application.', detail: reason };
  }
  if (idpError === 'invalid_client' || idpError === 'unauthorized_client' || /invalid_client|client authentication/i.test(reason)) {
    return { check: 'client', title: 'The IdP did not accept the client ID or secret.', fix: 'Copy the client ID and the client secret of this application at your IdP again (the secret may have been rotated), and save.', detail: reason };
  }
  if (idpError === 'invalid_grant' || /redirect_uri/i.test(reason)) {
    return { check: 'client', title: 'The IdP refused the code exchange (redirect URI or code).', fix: `Register exactly ${v.redirectUri ?? 'the redirect URI shown above'} as a redirect URI of this application.`, detail: reason };
  }
  if (/\b(iat|exp|nbf)\b|expired|in the future/i.test(reason)) {
    return { check: 'clock', title: "The ID token's timestamps do not fit the current time (clock skew).", fix: "Check that the IdP server's clock is correct (synchronised with NTP).", detail: reason };
  }
  if (/\baud\b|audience/i.test(reason)) {
    return { check: 'audience', title: 'The ID token was issued for another client (audience).', fix: 'Enter the client ID of this very application.', detail: reason };
  }
  if (/\biss\b|issuer/i.test(reason)) {
    return { check: 'issuer', title: 'The answer names another issuer than the one entered.', fix: 'Enter the issuer exactly as the IdP\'s discovery document (/.well-known/openid-configuration) states it.', detail: reason };
  }
  if (/signature|jwks/i.test(reason)) {
    return { check: 'signature', title: "The ID token's signature does not check out.", fix: "Check the IdP's signing keys (jwks_uri) are reachable from the service and the token is signed with RS256 or ES256.", detail: reason };
  }
  if (idpError) return { check: 'idp_refused', title: 'The IdP refused the sign-in.', fix: "Look at the IdP's own log for this error.", detail: reason };
  return { ...fallback(reason), check: 'token' };
}

/** The claims came back but lack what a sign-in needs. */
export function explainClaims(
  problem: 'email_missing' | 'domain' | 'domain_other_provider',
  v: SetupValues & { domain?: string; emailAttribute?: string; otherProviderDomain?: string },
): Omit<Explanation, 'detail'> {
  if (problem === 'email_missing') {
    return {
      check: 'email_missing',
      title: 'No email address came back.',
      fix: `Release the user's email address to this application (SAML: an attribute named ${v.emailAttribute ?? 'email'}, or the NameID; OIDC: the email scope and claim), or map the attribute that carries it below.`,
    };
  }
  if (problem === 'domain_other_provider') {
    const other = v.otherProviderDomain ?? 'that domain';
    return {
      check: 'domain_other_provider',
      title: `The email address is in ${v.domain ?? 'a domain'}, whose users sign in through another SSO provider of this service (the one for ${other}), so this provider may not sign them in.`,
      fix: `Test with a user of ${(v.domains ?? []).join(', ')} outside ${other}. The users of ${other} keep signing in through their own provider even after this one is activated; if they should move to this one, ask the owner of the service.`,
    };
  }
  return {
    check: 'domain',
    title: `The email address is in ${v.domain ?? 'a domain'}, which this setup link does not cover.`,
    fix: `Sign in with a user of ${(v.domains ?? []).join(', ')}; to add a domain, ask the owner of the service for a new setup link.`,
  };
}

/**
 * What the link holder is told when the service's own requests to the IdP failed (the token,
 * userinfo or signing-key requests, or discovery redone at sign-in): the addresses are the
 * holder's choice (the issuer, and the endpoints its discovery document names), so whatever
 * happened there (refused address, connection refused, timeout, an answer that is not OpenID
 * Connect) is one sentence, never the network's error, an address or the shape of an answer: the
 * test sign-in cannot be used to map which internal hosts answer and how.
 */
export const IDP_REQUEST_FAILED = 'The service could not complete its requests to the identity provider (token, userinfo or signing keys): no usable answer came back.';

export function explainIdpRequest(detail: string = IDP_REQUEST_FAILED): Explanation {
  return {
    check: 'idp_request',
    title: 'The service could not complete its requests to the identity provider.',
    fix: "Check that the endpoints the IdP's discovery document names (token_endpoint, userinfo_endpoint, jwks_uri) are public HTTPS addresses the service can reach, and that they answer as an OpenID Connect provider does.",
    detail,
  };
}

// Network detail in a reason: error codes of the network stack and of undici, the guard's refusal,
// fetch's own words, IP addresses. (Not URLs: an IdP's own error description may quote one, such
// as the redirect URI it expected, and that came through the browser, not the service's network.)
const NETWORK_DETAIL =
  /fetch failed|\b(?:ECONN\w*|ENOTFOUND|EAI_\w+|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|UND_ERR\w*|ERR_\w+)\b|socket hang up|other side closed|OUTBOUND_ALLOW_CIDRS|resolves to an? |refused: |\b(?:\d{1,3}\.){3}\d{1,3}\b|\[[0-9a-f]*:[0-9a-f:.]*\]/i;

/**
 * The last guard before an explanation reaches the link holder (stored and shown): one whose
 * detail still carries network detail, from whatever path, becomes explainIdpRequest.
 */
export function withoutNetworkDetailIn(e: Explanation): Explanation {
  return NETWORK_DETAIL.test(e.detail) ? explainIdpRequest() : e;
}

