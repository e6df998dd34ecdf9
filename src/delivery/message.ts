// The outbox message as the delivery side sees it: the JSON value Debezium wrote (the request as
// written, placeholders and all) plus an envelope carried in Kafka headers.
//
// Envelope headers — the contract between the dispatcher and the retry ladder (retry/ladder.ts):
//   id, kind, project   set by the Debezium connector on the main outbox topic; always present
//   run                 attempt sequence, 1 for the original message; a manual retry or a bulk
//                       replay republishes the message with run + 1 (the budget restarts per run)
//   attempt             the number (1-based, within the run) of the attempt this record asks for;
//                       the ladder republishes a failed message with attempt + 1
//   first-created-at    ISO time the message was first enqueued (the payload's created_at); the
//                       24 h age limit of run 1 counts from here (kept across runs: the listing orders by it)
//   due-at              epoch milliseconds before which the attempt must not be made; a retry
//                       consumer pauses its partition until the head record is due
//   run-started-at      epoch ms a manual retry / replay started run > 1; its age budget counts
//                       from here (kept while the run moves up the ladder, dropped by a new run)
//   held-ms             milliseconds this run has spent held while its endpoint's circuit was open
//                       (delivery/endpoints/); added to the run's age budget, dropped by a new run
//   released            set by the releaser on a record it puts back: 'probe' (the one attempt of a
//                       half-open circuit), 'paced' (released after the circuit closed or within the
//                       rate limit) or 'give_up' (the endpoint was given up on: end dead, no request;
//                       'expire', its name before, is read as 'give_up'); or by ordered delivery:
//                       'next' (the next message of its key, taken from ordering_queue: ordering/)
// Records without run/attempt/first-created-at/due-at (everything Debezium writes) mean run 1,
// attempt 1, created_at from the payload, due now. The value bytes are never re-encoded when a
// message is republished, so what is on the retry and dead topics is exactly what SQL enqueued.
import type { IHeaders, KafkaMessage } from 'kafkajs';
import { isUuid } from '../lib/uuid.js';

export type MessageKind = 'webhook' | 'http' | 'email';
export const KINDS: readonly MessageKind[] = ['webhook', 'http', 'email'];

/** base.http_request(...) as enqueued. */
export interface HttpPayload {
  id: string;
  kind: 'http';
  created_at: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  callback_function: string | null;
  timeout_ms: number | null;
}

/** base.send_email(...) as enqueued. */
export interface EmailPayload {
  id: string;
  kind: 'email';
  created_at: string;
  recipient: string;
  subject: string;
  html: string | null;
  text: string | null;
  callback_function: string | null;
}

/** The row-change payload a database webhook sends (docs/delivery.md, "Payloads"; built by base.webhook_trigger). */
export interface WebhookEventPayload {
  /** BACKFILL: a row sent by a backfill (src/outbox/backfill.ts), not a change */
  type: 'INSERT' | 'UPDATE' | 'DELETE' | 'BACKFILL';
  schema: string;
  table: string;
  record: Record<string, unknown> | null;
  old_record: Record<string, unknown> | null;
  webhook_id: string;
  occurred_at: string;
  truncated?: boolean;
  truncated_columns?: string[];
  /** a test event (POST .../webhooks/{id}/test), not a change of the table */
  test?: boolean;
}

export interface WebhookPayload {
  id: string;
  kind: 'webhook';
  created_at: string;
  webhook_id: string;
  payload: WebhookEventPayload;
}

/**
 * Added by the project database to an ordered message (docs/delivery.md, "Ordered delivery"):
 * `ordering_key` is `row:<webhook id>:<primary key as JSON array>` (a webhook with ordering "row")
 * or `key:<key>` (base.http_request's ordering_key); `seq` is its place in the key, commit order.
 */
export interface OrderedFields {
  ordering_key?: string;
  seq?: number;
}

export type Payload = (HttpPayload | EmailPayload | WebhookPayload) & OrderedFields;

export interface OutboxMessage {
  id: string;
  project: string;
  kind: MessageKind;
  payload: Payload;
  run: number;
  attempt: number;
  /** ISO time of the first enqueue; the age budget counts from here */
  firstCreatedAt: string;
  /** epoch ms when this attempt is due (0: now) */
  dueAt: number;
  /** epoch ms a manual retry or replay started this run (header run-started-at); its age budget counts from here */
  runStartedAt?: number;
  /** ms this run has been held for its endpoint (header held-ms): the age budget is extended by it */
  heldMs?: number;
  /** how the releaser put this record back (header released), if it did */
  released?: Released;
  /** ordered delivery: the message's key and place in it (payload ordering_key / seq); absent: unordered */
  orderingKey?: string;
  seq?: number;
  /** the record's value exactly as it arrived; republish this, never a re-serialisation */
  rawValue: Buffer;
}

export type Released = 'probe' | 'paced' | 'give_up' | 'next';
const RELEASED: readonly string[] = ['probe', 'paced', 'give_up', 'next'];
/** a record put back by an older build still on a topic */
const releasedOf = (h: string | undefined): Released | undefined => (h === 'expire' ? 'give_up' : (RELEASED.find((r) => r === h) as Released | undefined));

export class MalformedMessageError extends Error {}

const header = (h: IHeaders | undefined, name: string): string | undefined => {
  const v = h?.[name];
  if (v === undefined || v === null) return undefined;
  const one = Array.isArray(v) ? v[0] : v;
  return one === undefined ? undefined : one.toString();
};

const positiveInt = (s: string | undefined, fallback: number): number => {
  if (s === undefined) return fallback;
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new MalformedMessageError(`bad envelope number "${s}"`);
  return n;
};

/** Reads a record of the outbox, retry or dead topic. Throws MalformedMessageError on garbage. */
export function decodeMessage(record: Pick<KafkaMessage, 'headers' | 'value' | 'key'>): OutboxMessage {
  if (!record.value) throw new MalformedMessageError('record without a value');
  let payload: Payload;
  try {
    payload = JSON.parse(record.value.toString('utf8'));
  } catch {
    throw new MalformedMessageError('record value is not JSON');
  }
  const id = header(record.headers, 'id') ?? payload?.id ?? record.key?.toString();
  const kind = (header(record.headers, 'kind') ?? payload?.kind) as MessageKind;
  const project = header(record.headers, 'project');
  if (!id || !isUuid(id)) throw new MalformedMessageError('record without a message id');
  if (!KINDS.includes(kind)) throw new MalformedMessageError(`unknown kind "${kind}"`);
  if (!project) throw new MalformedMessageError('record without a project header');
  if (typeof payload !== 'object' || payload === null) throw new MalformedMessageError('payload is not an object');
  const due = header(record.headers, 'due-at');
  return {
    id,
    project,
    kind,
    payload,
    run: positiveInt(header(record.headers, 'run'), 1),
    attempt: positiveInt(header(record.headers, 'attempt'), 1),
    firstCreatedAt: header(record.headers, 'first-created-at') ?? payload.created_at ?? new Date().toISOString(),
    dueAt: due ? Number(due) || 0 : 0,
    runStartedAt: Number(header(record.headers, 'run-started-at')) || undefined,
    heldMs: Number(header(record.headers, 'held-ms')) || undefined,
    released: releasedOf(header(record.headers, 'released')),
    rawValue: record.value,
    // last: a spread followed by more properties is slow on Node 20's V8 (attempt/pipeline.ts)
    ...orderingOf(payload),
  };
}

/**
 * The largest magnitude an Avro `long` of the delivery events takes here: avsc encodes a JS number
 * only within ±(2^53 − 2) and throws above it. A payload's number that reaches an event (`seq`, the
 * creation time in microseconds) must be within it, or recording the outcome would fail on every
 * try and hold its partition's offset for good (found with a forged message whose seq was 2^53 − 1).
 */
export const EVENT_LONG_LIMIT = 9_007_199_254_740_990;

function orderingOf(p: Payload): Pick<OutboxMessage, 'orderingKey' | 'seq'> {
  if (typeof p.ordering_key !== 'string' || p.ordering_key === '') return {};
  if (!Number.isSafeInteger(p.seq)) throw new MalformedMessageError('ordered message without a seq');
  if (Math.abs(p.seq as number) > EVENT_LONG_LIMIT) throw new MalformedMessageError('ordered message with a seq out of range');
  return { orderingKey: p.ordering_key, seq: p.seq };
}

/**
 * The Kafka message that carries `msg` to another topic (retry step, dead topic, or the outbox
 * topic again for a manual retry) with the envelope changed as given. Keyed by message id, so all
 * records of one message stay in one partition of each topic; an ordered message by its ordering
 * key, as Debezium keyed it, so it meets the other messages of its key in one partition.
 */
export function encodeMessage(
  msg: OutboxMessage,
  next: Partial<Pick<OutboxMessage, 'run' | 'attempt' | 'dueAt'>> = {},
  extraHeaders: Record<string, string> = {},
): { key: string; value: Buffer; headers: Record<string, string> } {
  const sameRun = (next.run ?? msg.run) === msg.run;
  return {
    key: msg.orderingKey ?? msg.id,
    value: msg.rawValue,
    headers: {
      id: msg.id,
      kind: msg.kind,
      project: msg.project,
      run: String(next.run ?? msg.run),
      attempt: String(next.attempt ?? msg.attempt),
      'first-created-at': msg.firstCreatedAt,
      'due-at': String(next.dueAt ?? msg.dueAt),
      ...(msg.runStartedAt && sameRun ? { 'run-started-at': String(msg.runStartedAt) } : {}),
      ...(msg.heldMs && sameRun ? { 'held-ms': String(msg.heldMs) } : {}),
      ...extraHeaders,
    },
  };
}

/**
 * The callback_function of a message, if it has one (webhooks never do). Decided by the record's
 * kind, never the payload's: the connector gives every logical decoding message the kind webhook
 * whatever its content claims (docs/security.md, "Cannot forge a message"), and a forged one must
 * not name a function for the service to call in the project's database.
 */
export function callbackOf(msg: Pick<OutboxMessage, 'kind' | 'payload'>): string | null {
  return msg.kind === 'webhook' ? null : ((msg.payload as HttpPayload | EmailPayload).callback_function ?? null);
}

/**
 * Dedup key of one attempt: a redelivered record with the same key is the same attempt. It starts
 * with the project: a message id is chosen in the project's own database, so two projects may
 * use one id, and neither's record may pass for the other's (project refs hold no ':').
 */
export const attemptKey = (msg: Pick<OutboxMessage, 'project' | 'id' | 'run' | 'attempt'>) => `${msg.project}:${msg.id}:${msg.run}:${msg.attempt}`;

/** ISO time with up to microsecond digits (as base._enqueue writes it) → epoch microseconds. */
export function isoToMicros(iso: string): number | undefined {
  const m = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}:?\d{2})$/.exec(iso);
  if (!m) return undefined;
  const seconds = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(seconds)) return undefined;
  const micros = seconds * 1000 + Number((m[2] ?? '').padEnd(6, '0'));
  // before about 1685 or after 2255: not a time an event can carry (EVENT_LONG_LIMIT); read as unknown
  return Math.abs(micros) > EVENT_LONG_LIMIT ? undefined : micros;
}
