// Database webhooks: the payload (the row change, docs/delivery.md "Payloads") comes from the message, everything else — URL, headers,
// timeout, signing secrets — from the webhook as it is at send time, so an update applies to
// messages already queued and a deleted webhook ends its messages dead without a request.
import type { OutboxMessage, WebhookEventPayload, WebhookPayload } from '../message.js';
import type { AttemptOutcome } from '../../outbound/index.js';
import type { WebhookConfig } from './send-config.js';
import { renderTemplate, templateSecretNames, type TemplateScope } from './template.js';
import { RESERVED_HEADERS, signedHeaders } from './signature.js';
import type { Channel, ChannelDeps } from './channel.js';
import { renderAndSend, tooDeep } from './http.js';
import { isUuid } from '../../lib/uuid.js';

/** The largest body a webhook sends: the row-change payload's limit (docs/delivery.md, "Payloads"). */
export const BODY_LIMIT_BYTES = 1_048_576;

/**
 * The request body: the row-change payload, or the webhook's template filled from it (with the
 * template's {{secret:NAME}} values, which the caller scrubs from what it keeps of the attempt).
 */
async function bodyOf(msg: OutboxMessage, w: WebhookConfig, deps: ChannelDeps): Promise<{ body: string; secrets?: ReadonlyMap<string, string> } | AttemptOutcome> {
  const event = (msg.payload as WebhookPayload).payload;
  if (w.template === null || w.template === undefined) return { body: JSON.stringify(event) };
  const names = templateSecretNames(w.template);
  const secrets = names.length ? await deps.directory.secrets(msg.project, names) : new Map<string, string>();
  const unknown = names.find((n) => !secrets.has(n));
  if (unknown) return { outcome: 'failed', reason: 'unknown_secret', error: `unknown secret ${unknown}`, durationMs: 0 };
  const body = JSON.stringify(renderTemplate(w.template, templateScope(msg.id, event), secrets));
  const size = Buffer.byteLength(body, 'utf8');
  if (size > BODY_LIMIT_BYTES) {
    return { outcome: 'dead', reason: 'invalid_request', error: `the webhook's template rendered ${size} bytes, over the ${BODY_LIMIT_BYTES}-byte limit`, durationMs: 0 };
  }
  return { body, secrets };
}

/** What a template's placeholders read for one row-change message. */
export function templateScope(messageId: string, event: WebhookEventPayload): TemplateScope {
  return {
    type: event.type,
    schema: event.schema,
    table: event.table,
    occurred_at: event.occurred_at,
    webhook_id: event.webhook_id,
    message_id: messageId,
    test: event.test === true,
    truncated: event.truncated === true,
    truncated_columns: event.truncated_columns ?? [],
    payload: event,
    record: event.record,
    old_record: event.old_record,
  };
}

const webhookOf = (msg: OutboxMessage, deps: ChannelDeps) => deps.directory.webhook(msg.project, (msg.payload as WebhookPayload).webhook_id);

export const webhookChannel: Channel = {
  async describe(msg, deps) {
    const w = await webhookOf(msg, deps);
    // The id every event and the projection (a uuid column) carry. A message's own claim only when
    // it is a uuid: a forged one may claim anything, and a number made its event fail to encode on
    // every try (holding its partition), a non-uuid string failed the projection's batch (2026-11-27).
    const claimed: unknown = (msg.payload as WebhookPayload).webhook_id;
    return { target: w?.url ?? '(deleted webhook)', method: 'POST', webhookId: w ? w.id : typeof claimed === 'string' && isUuid(claimed) ? claimed : null };
  },

  async attempt(msg, deps) {
    const deep = tooDeep(msg);
    if (deep) return deep;
    let w = await webhookOf(msg, deps);
    // Deleted or disabled ends the message: only on what the database says now, not on a cached
    // copy up to DELIVERY_CONFIG_TTL old (a replay right after enabling it again must be sent).
    // (a copy read within 200 ms counts as now: a disabled webhook's messages cost a query per 200 ms)
    if (!w || !w.enabled) w = await deps.directory.webhook(msg.project, (msg.payload as WebhookPayload).webhook_id, 200);
    if (!w) return { outcome: 'dead', reason: 'webhook_deleted', error: 'webhook deleted', durationMs: 0 };
    if (!w.enabled) return { outcome: 'dead', reason: 'webhook_disabled', error: 'webhook disabled', durationMs: 0 };
    const rendered = await bodyOf(msg, w, deps);
    if ('outcome' in rendered) return rendered;
    const body = rendered.body;
    // The reserved headers are refused by the API already; dropping them here keeps an old row from
    // ever overriding the signature.
    const headers = Object.fromEntries(Object.entries(w.headers).filter(([k]) => !RESERVED_HEADERS.has(k.toLowerCase())));
    const fixed: Record<string, string> = { 'content-type': 'application/json' };
    if (w.signingSecrets.length > 0) Object.assign(fixed, signedHeaders(w.signingSecrets, msg.id, body));
    else deps.ctx.log.warn({ webhook: w.id, message: msg.id }, 'webhook has no signing secret; sending unsigned');
    return renderAndSend(msg, deps, { method: 'POST', url: w.url, headers, body: null }, w.timeoutMs, fixed, body, rendered.secrets);
  },
};
