// Database webhooks: the payload (the row change, docs/delivery.md "Payloads") comes from the message, everything else — URL, headers,
// timeout, signing secrets — from the webhook as it is at send time, so an update applies to
// messages already queued and a deleted webhook ends its messages dead without a request.
import type { OutboxMessage, WebhookPayload } from '../message.js';
import { RESERVED_HEADERS, signedHeaders } from './signature.js';
import type { Channel, ChannelDeps } from './channel.js';
import { renderAndSend } from './http.js';

const webhookOf = (msg: OutboxMessage, deps: ChannelDeps) => deps.directory.webhook(msg.project, (msg.payload as WebhookPayload).webhook_id);

export const webhookChannel: Channel = {
  async describe(msg, deps) {
    const w = await webhookOf(msg, deps);
    return { target: w?.url ?? '(deleted webhook)', method: 'POST', webhookId: (msg.payload as WebhookPayload).webhook_id };
  },

  async attempt(msg, deps) {
    let w = await webhookOf(msg, deps);
    // Deleted or disabled ends the message: only on what the database says now, not on a cached
    // copy up to DELIVERY_CONFIG_TTL old (a replay right after enabling it again must be sent).
    // (a copy read within 200 ms counts as now: a disabled webhook's messages cost a query per 200 ms)
    if (!w || !w.enabled) w = await deps.directory.webhook(msg.project, (msg.payload as WebhookPayload).webhook_id, 200);
    if (!w) return { outcome: 'dead', reason: 'webhook_deleted', error: 'webhook deleted', durationMs: 0 };
    if (!w.enabled) return { outcome: 'dead', reason: 'webhook_disabled', error: 'webhook disabled', durationMs: 0 };
    const body = JSON.stringify((msg.payload as WebhookPayload).payload);
    // The reserved headers are refused by the API already; dropping them here keeps an old row from
    // ever overriding the signature.
    const headers = Object.fromEntries(Object.entries(w.headers).filter(([k]) => !RESERVED_HEADERS.has(k.toLowerCase())));
    const fixed: Record<string, string> = { 'content-type': 'application/json' };
    if (w.signingSecrets.length > 0) Object.assign(fixed, signedHeaders(w.signingSecrets, msg.id, body));
    else deps.ctx.log.warn({ webhook: w.id, message: msg.id }, 'webhook has no signing secret; sending unsigned');
    return renderAndSend(msg, deps, { method: 'POST', url: w.url, headers, body: null }, w.timeoutMs, fixed, body);
  },
};
