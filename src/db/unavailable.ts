// Whether an error means "the database is not there right now" (restarting, failing over, refusing
// connections) rather than "this request is wrong" or "our bug": the API answers those with 503
// service_unavailable and Retry-After instead of 500, and the logs say which it was.
const PG_UNAVAILABLE = new Set([
  '57P01', // admin_shutdown: the server is shutting down (restart, failover)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up, or in recovery
  '53300', // too_many_connections
]);

const NET_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

const PG_MESSAGES = [/is not currently accepting connections/i, /^Connection terminated/i, /timeout exceeded when trying to connect/i, /^Client has encountered a connection error/i, /database system is (starting up|shutting down|in recovery mode)/i];

export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (PG_UNAVAILABLE.has(code) || code.startsWith('08') || NET_UNAVAILABLE.has(code)) return true;
    // AggregateError (a connect to every address of a host failed)
    const errors = (e as { errors?: unknown[] }).errors;
    if (Array.isArray(errors) && errors.some((x) => isDatabaseUnavailable(x))) return true;
    if (typeof e.message === 'string' && PG_MESSAGES.some((re) => re.test(e!.message as string))) return true;
  }
  return false;
}
