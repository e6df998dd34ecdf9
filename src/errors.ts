// The error catalogue: every client-visible error has a stable snake_case code, an HTTP status and
// a default message. The table of docs/errors.md is checked against this list by a unit test
// (`npm run docs:errors` rewrites it when you add one here). Internal errors never reach a client:
// they become a bare 500 `internal_error` and are logged once with the request id.

export const catalogue = {
  // generic request problems
  validation_failed: [400, 'The request is not valid.'],
  invalid_json: [400, 'The request body is not valid JSON.'],
  payload_too_large: [413, 'The request body is too large.'],
  unsupported_media_type: [415, 'Send the body as application/json.'],
  headers_too_large: [431, 'The request headers are too large.'],
  bad_request: [400, 'The request is malformed.'],
  request_timeout: [408, 'The request was not received in time.'],
  not_found: [404, 'Not found.'],
  method_not_allowed: [405, 'Method not allowed.'],
  rate_limited: [429, 'Too many requests.'],
  internal_error: [500, 'Something went wrong on our side; it has been logged.'],
  service_unavailable: [503, 'A dependency is unavailable.'],

  // authentication and authorization (Management API)
  unauthorized: [401, 'A valid owner token is required (Authorization: Bearer <token>).'],
  project_not_found: [404, 'No such project, or it is not yours.'],
  feature_not_in_plan: [402, "The project's plan does not include this feature."],
  invalid_api_key: [401, 'A valid project API key is required.'],

  // projects and resources
  project_exists: [409, 'A project with that ref already exists.'],
  webhook_not_found: [404, 'No such webhook.'],
  table_not_found: [400, 'The table does not exist in the project database.'],
  column_not_found: [400, "A column does not exist in the webhook's table."],
  trigger_not_allowed: [400, "The project database user may not create a trigger on that table."],
  url_not_allowed: [400, 'The URL points at a private, loopback, link-local or metadata address.'],
  invalid_url: [400, 'The URL is not a valid http(s) URL.'],
  reserved_header: [400, 'The headers webhook-id, webhook-timestamp and webhook-signature are set by the service.'],
  secret_not_found: [404, 'No such secret.'],
  smtp_not_configured: [404, 'No SMTP settings are configured for this project.'],
  delivery_not_found: [404, 'No such delivery.'],
  delivery_not_retryable: [409, 'Only failed or dead deliveries can be retried.'],
  invalid_filter: [400, "The webhook's row filter is not valid for its table."],
  webhook_disabled: [409, 'The webhook is disabled; enable it to send a test event or a backfill.'],
  invalid_template: [400, "The webhook's body template is not valid."],
  invalid_sample: [400, 'The sample row does not fit the webhook\'s table.'],
  no_sample_row: [404, 'The webhook\'s table has no row to preview or send as a test; give one in the request.'],
  backfill_not_found: [404, 'No such backfill.'],
  backfill_running: [409, 'This webhook already has a backfill running or paused; cancel it first.'],
  backfill_needs_row_ordering: [400, 'A backfill needs ordering "row" on the webhook, so that a row changed during the backfill never arrives older after newer.'],
  backfill_finished: [409, 'The backfill has finished or was cancelled.'],
  unsafe_column_type: [400, "A column of the webhook's table has a type whose cast to json (or domain check) is the database users' own code; a webhook will not run it with the service's rights."],
  ordering_needs_primary_key: [400, 'Ordering "row" needs a primary key on the webhook\'s table.'],
  delivery_superseded: [409, 'A later message of the same ordering key was already delivered; sending this older one again would put an older state after a newer one.'],
  ordering_key_not_blocked: [404, 'No such blocked ordering key.'],
  outbox_unavailable: [503, 'The outbox could not be enabled; try again.'],

  // SSO management
  sso_provider_not_found: [404, 'No enabled SSO provider matches.'],
  sso_domain_taken: [409, 'A domain is already bound to another provider of this project.'],
  oidc_discovery_failed: [400, 'OIDC discovery failed for the issuer.'],
  oidc_issuer_mismatch: [400, 'The discovered issuer differs from the given issuer.'],
  saml_metadata_invalid: [400, 'The SAML metadata could not be read.'],
  saml_metadata_no_signing_cert: [400, 'The SAML metadata contains no signing certificate.'],
  sso_setup_link_not_found: [404, 'No such SSO setup link.'],
  sso_setup_link_gone: [410, 'This SSO setup link has expired, was revoked or was already used.'],
  sso_setup_test_required: [409, 'Run a successful test sign-in with the current settings before activating the provider.'],
  sso_setup_conflict: [409, 'The provider of this setup link was changed at the same time (another save, or the owner); reload the page and save again.'],
  user_not_found: [404, 'No such user.'],
  user_exists: [409, 'A user with that email already exists.'],

  // SSO sign-in (JSON on API calls, ?error= on redirects)
  bad_code_verifier: [400, 'The code verifier does not match the code challenge.'],
  flow_state_not_found: [404, 'The sign-in code is invalid, used or expired.'],
  flow_state_expired: [400, 'The sign-in attempt expired; start again.'],
  invalid_credentials: [400, 'Invalid credentials.'],
  refresh_token_not_found: [400, 'Invalid refresh token.'],
  refresh_token_already_used: [400, 'Invalid refresh token: already used.'],
  session_not_found: [401, 'The session has ended.'],
  bad_jwt: [401, 'The access token is invalid or expired.'],
  invalid_redirect: [400, 'The redirect address is not allowed.'],
  email_exists: [422, 'An account with that email exists and the linking rules did not allow linking.'],
  email_domain_not_allowed: [403, "The identity provider returned an email outside the provider's domains."],
  email_domain_other_provider: [403, 'The identity provider returned an email of a domain that another, more specific SSO provider of this project serves; only that provider may sign in its users.'],
  invalid_saml_response: [400, 'The SAML response did not validate.'],
  signup_disabled: [403, 'Sign-ups are disabled for this provider or project.'],
  user_banned: [403, 'The user is banned.'],
  sso_failed: [400, 'Single sign-on failed.'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof catalogue;

/** An error a client may see: status, stable code, message (never internal detail or secrets). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details?: unknown;
  constructor(code: ErrorCode, message?: string, details?: unknown) {
    super(message ?? catalogue[code][1]);
    this.code = code;
    this.status = catalogue[code][0];
    this.details = details;
  }
  toJSON() {
    return this.details === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, details: this.details };
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;
