// The result of one outbound attempt, whatever the channel (webhook, http, email). Classification
// (docs/delivery.md, "Classification"): `delivered` is final, `failed` goes up the retry ladder,
// `dead` is final without retry.

/**
 * Why an attempt ended as it did. The circuit breaker's fault rule (delivery/endpoints/keys.ts) and
 * the dead letter's reason (delivery/retry/ladder.ts) are decided on this, never on the error text.
 */
export type OutcomeReason =
  | 'accepted' // the target took it (HTTP 2xx, SMTP 2xx)
  | 'http_status' // an HTTP answer other than 2xx: see httpStatus
  | 'smtp_reply' // an SMTP 4xx or 5xx reply: see smtpCode
  | 'timeout' // no answer within the attempt's time limit
  | 'network' // the target could not be reached (refused, reset, DNS, TLS)
  | 'blocked_target' // the SSRF guard refused the address
  | 'invalid_request' // the request cannot be made as written (URL, scheme, headers, message)
  | 'unknown_secret' // a {{secret:NAME}} the project has not set
  | 'webhook_deleted' // the message's webhook no longer exists
  | 'webhook_disabled' // the webhook is disabled (by its owner, or given up on by the service)
  | 'endpoint_given_up' // a target host that failed every probe for ENDPOINT_DISABLE_AFTER
  | 'expired' // not attempted: the message outlived MAX_MESSAGE_AGE
  | 'not_configured' // no SMTP server, or settings that cannot be read, or the project is gone
  | 'internal'; // our own failure during the attempt
export type AttemptOutcome = {
  outcome: 'delivered' | 'failed' | 'dead';
  /** why, as a value the code decides on (the circuit's fault rule, the dead letter's reason); `error` is for people */
  reason: OutcomeReason;
  /** HTTP status, when a response arrived */
  httpStatus?: number;
  /** SMTP reply code, when the server answered */
  smtpCode?: number;
  /** readable reason; never contains a secret value */
  error?: string;
  /** response body or server reply, truncated to RESPONSE_BODY_LIMIT */
  responseBody?: string;
  /** milliseconds the target asked us to wait (Retry-After), when it did */
  retryAfterMs?: number;
  durationMs: number;
};
