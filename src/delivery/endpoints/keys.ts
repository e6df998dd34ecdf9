// What an endpoint is, for the circuit breaker, the rate limit and the hold (docs/delivery.md,
// "Endpoint protection"): a webhook (`webhook:<id>`), or a target host of base.http_request in one
// project (`host:<host>`: the URL's host, with its port when not the default). Per project: one project's failing path on a
// shared host (a bad token, say) must not stop another project's requests to it. Email has no
// endpoint of its own here: it goes to the platform's or the project's SMTP server, whose failures
// are the operator's concern, not one recipient's.
import type { DeliveryTarget } from '../channels/channel.js';
import type { OutboxMessage } from '../message.js';
import type { AttemptOutcome } from '../../outbound/index.js';

export interface Endpoint {
  project: string;
  /** `webhook:<uuid>` or `host:<host[:port]>` */
  key: string;
  webhookId: string | null;
}

export function endpointOf(msg: Pick<OutboxMessage, 'kind' | 'project'>, target: DeliveryTarget): Endpoint | null {
  if (msg.kind === 'webhook') return target.webhookId ? { project: msg.project, key: `webhook:${target.webhookId}`, webhookId: target.webhookId } : null;
  if (msg.kind !== 'http') return null;
  const host = hostOf(target.target);
  return host ? { project: msg.project, key: `host:${host}`, webhookId: null } : null;
}

/** host[:port] of an http(s) URL as written (two services on one machine are two endpoints). */
function hostOf(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.host.toLowerCase() : null;
  } catch {
    return null;
  }
}

/** Map key of an endpoint in this process's caches. */
export const endpointId = (e: Pick<Endpoint, 'project' | 'key'>) => `${e.project}\u0000${e.key}`;

/**
 * Whether a failed attempt speaks of the endpoint's health: it answered 5xx, 408, 425 or 429,
 * timed out, or could not be reached. Another 4xx (a 409 conflict is retried, but it is the
 * receiver's answer about this message, not the receiver being down), a blocked target, an unknown
 * secret or an internal error of ours is not the endpoint being down.
 */
export function isEndpointFault(outcome: Pick<AttemptOutcome, 'outcome' | 'reason' | 'httpStatus'>): boolean {
  if (outcome.outcome !== 'failed') return false;
  if (outcome.reason === 'timeout' || outcome.reason === 'network') return true;
  return outcome.reason === 'http_status' && outcome.httpStatus != null && isFaultStatus(outcome.httpStatus);
}

/** The HTTP answers of an endpoint that is down or overwhelmed. */
export const isFaultStatus = (status: number): boolean => status >= 500 || status === 408 || status === 425 || status === 429;
