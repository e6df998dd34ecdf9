// The result of one outbound attempt, whatever the channel (webhook, http, email). Classification
// (docs/delivery.md, "Classification"): `delivered` is final, `failed` goes up the retry ladder,
// `dead` is final without retry.
export type AttemptOutcome = {
  outcome: 'delivered' | 'failed' | 'dead';
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
