// The result of one delivery attempt, whatever the channel (webhook, http, email). Classification
// follows the spec's section 3: `delivered` is final, `failed` goes up the retry ladder, `dead` is
// final without retry.
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
