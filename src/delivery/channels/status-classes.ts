// The classification of docs/delivery.md ("Classification") as code: which attempt results are
// delivered, failed (retried) or dead (final without retry). Kept pure so the whole table is
// covered by unit tests.
//
//   2xx                                        delivered
//   408, 409, 425, 429, 5xx                    failed   (transient: the target may recover)
//   network error, timeout, unknown secret     failed
//   3xx                                        dead     (redirects are not followed; the same
//                                                        request would get the same redirect, so
//                                                        the URL must be fixed instead)
//   any other 4xx                              dead
//   1xx as final status, >= 600                failed   (not HTTP semantics we can judge; treated
//                                                        as a misbehaving server that may recover)
//   blocked target, invalid URL/request,
//   deleted webhook                            dead
import type { AttemptOutcome } from '../../outbound/index.js';

const RETRYABLE_4XX = new Set([408, 409, 425, 429]);

export function classifyStatus(status: number): AttemptOutcome['outcome'] {
  if (status >= 200 && status < 300) return 'delivered';
  if (status >= 300 && status < 400) return 'dead';
  if (status >= 400 && status < 500) return RETRYABLE_4XX.has(status) ? 'failed' : 'dead';
  return 'failed';
}

/**
 * Retry-After as milliseconds from `now`: delta-seconds or an HTTP date (RFC 9110 10.2.3).
 * Anything unparseable or in the past gives undefined; capping is the retry ladder's business.
 */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Math.min(Number(v) * 1000, MAX_RETRY_AFTER_MS);
  if (!/[a-z]/i.test(v)) return undefined; // "1.5", "-3": not a date and not delta-seconds
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return at > now ? Math.min(at - now, MAX_RETRY_AFTER_MS) : undefined;
}

/**
 * The longest Retry-After read: a year. The ladder waits at most MAX_RETRY_WAIT_MS whatever is
 * asked; this bounds the figure the attempt's event records, which an Avro long must hold (a
 * receiver answering `Retry-After: 99999999999999999999` made that event fail to encode on every
 * try, and held its dispatcher partition's offsets for good, until 2026-11-27).
 */
export const MAX_RETRY_AFTER_MS = 366 * 86_400_000;
