// One HTTP attempt through the guarded undici agent: no redirects followed, the whole exchange
// (connect, headers, body) bounded by the message's timeout, the response body read only up to
// RESPONSE_BODY_LIMIT, and every failure turned into an AttemptOutcome rather than thrown.
import { EventEmitter } from 'node:events';
import { errors as undiciErrors, type Dispatcher } from 'undici';
import { classifyStatus, parseRetryAfter } from './status-classes.js';
import { blockedTargetText, findBlockedTargetError } from '../../outbound/index.js';
import type { AttemptOutcome } from '../../outbound/index.js';

export interface OutboundRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface SendOptions {
  agent: Dispatcher;
  timeoutMs: number;
  bodyLimit: number;
}

export const USER_AGENT = 'integrations-outbox/1.0';

export async function sendHttp(req: OutboundRequest, opts: SendOptions): Promise<AttemptOutcome> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return { outcome: 'dead', reason: 'invalid_request', error: 'invalid URL', durationMs: took() };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { outcome: 'dead', reason: 'invalid_request', error: `invalid URL: scheme ${url.protocol} is not allowed`, durationMs: took() };
  }
  // The whole exchange's bound: one timer and an EventEmitter as undici's abort signal (it takes
  // either). AbortSignal.timeout cost 2.5 % of the service's CPU under load (its EventTarget, and
  // the signal's timer tracked for collection; e2e profile, 2026-11-27).
  const abort = new EventEmitter();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.emit('abort');
  }, opts.timeoutMs);
  try {
    // the agent's own request(), not undici's request(url, { dispatcher }): that one copies these
    // options with a spread followed by more properties, slow on Node 20's V8 (attempt/pipeline.ts)
    const res = await opts.agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: req.method as Dispatcher.HttpMethod,
      headers: { 'user-agent': USER_AGENT, ...req.headers },
      body: req.body,
      signal: abort,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    const responseBody = await readLimited(res.body, opts.bodyLimit);
    const status = classifyStatus(res.statusCode);
    const outcome: AttemptOutcome = { outcome: status, reason: status === 'delivered' ? 'accepted' : 'http_status', httpStatus: res.statusCode, durationMs: took() };
    if (responseBody) outcome.responseBody = responseBody;
    if (outcome.outcome !== 'delivered') {
      outcome.error = res.statusCode >= 300 && res.statusCode < 400 ? `HTTP ${res.statusCode} (redirects are not followed)` : `HTTP ${res.statusCode}`;
      const retryAfter = parseRetryAfter(res.headers['retry-after']);
      if (retryAfter !== undefined) outcome.retryAfterMs = retryAfter;
    }
    return outcome;
  } catch (err) {
    return { ...classifyError(err, opts.timeoutMs, timedOut), durationMs: took() };
  } finally {
    clearTimeout(timer);
  }
}

/** A transport-level failure: blocked target and unsendable requests are dead, the rest failed. */
export function classifyError(err: unknown, timeoutMs: number, timedOut = false): Pick<AttemptOutcome, 'outcome' | 'reason' | 'error'> {
  const blocked = findBlockedTargetError(err);
  if (blocked) return { outcome: 'dead', reason: 'blocked_target', error: blockedTargetText(blocked) };
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (timedOut || e.name === 'TimeoutError' || e instanceof undiciErrors.HeadersTimeoutError || e instanceof undiciErrors.BodyTimeoutError) {
    return { outcome: 'failed', reason: 'timeout', error: `timeout after ${timeoutMs} ms` };
  }
  // A header value or method undici refuses to put on the wire: resending will not change it.
  if (e instanceof undiciErrors.InvalidArgumentError || e.code === 'ERR_INVALID_CHAR' || e.code === 'ERR_INVALID_HTTP_TOKEN') {
    return { outcome: 'dead', reason: 'invalid_request', error: `invalid request: ${e.message}` };
  }
  const code = e.code ?? e.cause?.code;
  return { outcome: 'failed', reason: 'network', error: `network error${code ? ` ${code}` : ''}: ${e.message ?? String(err)}` };
}

async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  if (limit === 0) {
    await body.dump();
    return '';
  }
  const chunks: Buffer[] = [];
  let size = 0;
  // 'data' events rather than `for await`: the async iterator was 2 % of the service's CPU under
  // load for bodies that are mostly one chunk (e2e profile, 2026-11-27)
  await new Promise<void>((resolve, reject) => {
    const onData = (b: Buffer) => {
      chunks.push(b);
      size += b.length;
      // Stop reading: the rest is not kept, and a huge or endless body must not hold the attempt.
      if (size >= limit) {
        body.off('data', onData);
        body.destroy();
        resolve();
      }
    };
    body.on('data', onData);
    body.once('end', resolve);
    // Left attached after the promise settles, on purpose: undici may still emit an error on a body
    // destroyed above (or one whose socket dies after 'end'), and an 'error' with no listener would
    // crash the process. A second settle of the promise is a no-op.
    body.once('error', reject);
  });
  // Cut at the limit, then drop a possibly split multi-byte character at the end.
  // NUL cannot be stored in a Postgres text column; it is not worth keeping from a response body.
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8').replace(/\uFFFD$/, '').replace(/\u0000/g, '');
}
