// base.http_request(...): the request as written, rendered with the project's secrets in memory,
// sent through the guarded undici agent under timeout_ms (default WEBHOOK_TIMEOUT_DEFAULT_MS).
//
// Body encoding: a JSON string body is sent as that text (text/plain unless a content-type header
// is given), any other non-null JSON value is sent as JSON (application/json unless given), null
// sends no body.
import type { HttpPayload, OutboxMessage } from '../message.js';
import { placeholderNames, scrub, substitute, substituteJson } from './placeholders.js';
import { sendHttp, type OutboundRequest } from './http-send.js';
import type { AttemptOutcome } from '../../outbound/index.js';
import type { Channel, ChannelDeps } from './channel.js';

export const httpChannel: Channel = {
  async describe(msg) {
    const p = msg.payload as HttpPayload;
    return { target: p.url, method: p.method, webhookId: null };
  },

  async attempt(msg, deps) {
    const deep = tooDeep(msg);
    if (deep) return deep;
    const p = msg.payload as HttpPayload;
    const headers = p.headers ?? {};
    return renderAndSend(msg, deps, { method: p.method, url: p.url, headers, body: p.body }, p.timeout_ms);
  },
};

interface Written {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** Shared by http and webhook: substitute secrets, send, scrub secret values from what is kept. */
export async function renderAndSend(
  msg: OutboxMessage,
  deps: ChannelDeps,
  written: Written,
  timeoutMs: number | null | undefined,
  extraHeaders: Record<string, string> = {},
  rawBody?: string,
  /** secrets already put into rawBody (a webhook's template): scrubbed from the outcome too */
  bodySecrets?: ReadonlyMap<string, string>,
): Promise<AttemptOutcome> {
  const names = placeholderNames(written.url, written.headers, rawBody === undefined ? written.body : null);
  const secrets = names.length > 0 ? await deps.directory.secrets(msg.project, names) : new Map<string, string>();
  for (const [k, v] of bodySecrets ?? []) if (!secrets.has(k)) secrets.set(k, v);
  const unknown = names.find((n) => !secrets.has(n));
  // An unknown secret is "failed" (it may be created before the next attempt): docs/delivery.md,
  // Classification.
  if (unknown) return { outcome: 'failed', reason: 'unknown_secret', error: `unknown secret ${unknown}`, durationMs: 0 };

  const headers = substituteJson(written.headers, secrets) as Record<string, string>;
  let body: string | undefined = rawBody;
  if (body === undefined && written.body !== null && written.body !== undefined) {
    const rendered = substituteJson(written.body, secrets);
    const text = typeof rendered === 'string';
    body = text ? (rendered as string) : JSON.stringify(rendered);
    if (!hasHeader(headers, 'content-type')) headers['content-type'] = text ? 'text/plain; charset=utf-8' : 'application/json';
  }
  // the service's headers (a webhook's content-type and signature) win over one written in
  // another case, which would otherwise be sent beside them
  const own = new Set(Object.keys(extraHeaders).map((k) => k.toLowerCase()));
  const mine = Object.fromEntries(Object.entries(headers).filter(([k]) => !own.has(k.toLowerCase())));
  const req: OutboundRequest = { method: written.method, url: substitute(written.url, secrets), headers: { ...mine, ...extraHeaders }, body };
  const outcome = await sendHttp(req, {
    agent: deps.http,
    timeoutMs: timeoutMs ?? deps.ctx.cfg.WEBHOOK_TIMEOUT_DEFAULT_MS,
    bodyLimit: deps.ctx.cfg.RESPONSE_BODY_LIMIT,
  });
  if (secrets.size > 0) {
    if (outcome.error) outcome.error = scrub(outcome.error, secrets);
    if (outcome.responseBody) outcome.responseBody = scrub(outcome.responseBody, secrets);
  }
  return outcome;
}

export const hasHeader = (h: Record<string, string>, name: string) => Object.keys(h).some((k) => k.toLowerCase() === name);

/** How deep a JSON body may nest: far beyond any real payload, far below what overflows the stack. */
export const MAX_BODY_DEPTH = 512;

/**
 * A message nested deeper than MAX_BODY_DEPTH ends dead at once. PostgreSQL's jsonb takes arrays
 * nested 10,000 deep; walked recursively (placeholders, templates, JSON.stringify) they overflowed
 * the stack, and every attempt crashed as an internal error until the message died (found by
 * review, 2026-11-29).
 */
export function tooDeep(msg: Pick<OutboxMessage, 'payload' | 'rawValue'>): AttemptOutcome | null {
  // each level costs an opening and a closing bracket: a record this short cannot nest too deep,
  // and the walk (every node of the payload, on every attempt) is skipped
  if (msg.rawValue.length <= 2 * MAX_BODY_DEPTH) return null;
  const depth = jsonDepth(msg.payload);
  return depth > MAX_BODY_DEPTH ? { outcome: 'dead', reason: 'invalid_request', error: `the message is nested more than ${MAX_BODY_DEPTH} levels deep`, durationMs: 0 } : null;
}

/** The nesting depth of a JSON value (a scalar: 0), walked without recursion; stops past MAX_BODY_DEPTH. */
export function jsonDepth(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d + 1 > max) max = d + 1;
    if (max > MAX_BODY_DEPTH) return max;
    for (const x of Array.isArray(v) ? v : Object.values(v)) if (x !== null && typeof x === 'object') stack.push([x, d + 1]);
  }
  return max;
}
