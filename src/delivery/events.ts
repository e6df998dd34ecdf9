// Delivery events on the events topic, Avro-encoded with the schemas in schemas/*.avsc (one record
// per file, each with a "version" attribute). Every record carries headers `event-type` (the record
// name) and `schema-version`, so a reader picks the writer schema without a registry, and old
// events stay readable after a schema evolves (keep every published version's file; resolve with
// avsc's createResolver when a reader's version differs). Keyed by message id: all events of one
// delivery are in one partition, in the order they were produced.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import avro from 'avsc';
import type { IHeaders } from 'kafkajs';
import { repoRoot } from '../config.js';

export interface DeliveryQueued {
  message_id: string;
  project: string;
  kind: string;
  run: number;
  webhook_id: string | null;
  target: string;
  method: string | null;
  callback_function: string | null;
  /** epoch microseconds */
  message_created_at: number;
  queued_at: number;
  /** v2: the ordering key and seq of an ordered message (docs/delivery.md, "Ordered delivery"); null otherwise */
  ordering_key?: string | null;
  seq?: number | null;
}

export interface DeliveryAttempted {
  message_id: string;
  project: string;
  kind: string;
  run: number;
  attempt: number;
  webhook_id: string | null;
  target: string;
  method: string | null;
  callback_function: string | null;
  message_created_at: number;
  outcome: 'delivered' | 'failed' | 'dead';
  status: 'delivered' | 'failed' | 'dead';
  final: boolean;
  http_status: number | null;
  smtp_code: number | null;
  error: string | null;
  response_body: string | null;
  retry_after_ms: number | null;
  next_attempt_at: number | null;
  started_at: number;
  finished_at: number;
  duration_ms: number;
  /** v2: as in DeliveryQueued */
  ordering_key?: string | null;
  seq?: number | null;
}

/** A call of the delivery's callback function (src/delivery/callbacks/). */
export interface CallbackInvoked {
  message_id: string;
  project: string;
  run: number;
  callback_function: string;
  status: 'ok' | 'retrying' | 'failed';
  error: string | null;
  attempts: number;
  called_at: number;
}

export type DeliveryEvent =
  | { type: 'DeliveryQueued'; version: number; data: DeliveryQueued }
  | { type: 'DeliveryAttempted'; version: number; data: DeliveryAttempted }
  | { type: 'CallbackInvoked'; version: number; data: CallbackInvoked };

interface Loaded {
  name: string;
  version: number;
  type: avro.Type;
}

function loadSchemas(dir = path.join(repoRoot, 'schemas')): Map<string, Loaded> {
  const out = new Map<string, Loaded>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.avsc'))) {
    const json = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { name: string; version?: number };
    const version = json.version ?? 1;
    out.set(`${json.name}@${version}`, { name: json.name, version, type: avro.Type.forSchema(json as avro.Schema) });
  }
  return out;
}

const schemas = loadSchemas();
const latest = new Map<string, Loaded>();
for (const s of schemas.values()) if ((latest.get(s.name)?.version ?? 0) < s.version) latest.set(s.name, s);

/** Where encodeEvent reports fields it had to leave out (a logger's error level). */
export type RefusedFieldsLog = (fields: Record<string, unknown>, msg: string) => void;
/** encodeEvent's report through the context's logger, at error level. */
export const refused = (ctx: { log: { error(o: object, msg: string): void } }): RefusedFieldsLog => (o, msg) => ctx.log.error(o, msg);

/**
 * Encodes an event with the latest version of its schema. A value a field's schema cannot carry
 * (a number beyond ±(2^53 − 2) for a long, say) is a bug here, but until 2026-11-27 such a value
 * fed from a message or a receiver's answer made the outcome fail to encode on every try, which
 * left its record unfinished and held its partition's offsets for good (four causes, each closed
 * where the value is read: docs/security.md). The net for a cause not found yet: a field that may
 * be null is sent null, reported at error level through `log`, and the outcome is recorded. A
 * refused field that may not be null still throws, as before, and so does every refusal when no
 * `log` is given (tests, and callers whose data comes from the control database).
 */
export function encodeEvent(ev: Omit<DeliveryEvent, 'version'>, log?: RefusedFieldsLog): { key: string; value: Buffer; headers: Record<string, string> } {
  const schema = latest.get(ev.type);
  if (!schema) throw new Error(`no schema for event ${ev.type}`);
  let value: Buffer;
  try {
    value = schema.type.toBuffer(ev.data);
  } catch (err) {
    const { data, nulled } = withRefusedFieldsNull(schema.type, ev.data as unknown as Record<string, unknown>);
    if (!log || nulled.length === 0) throw err;
    value = schema.type.toBuffer(data);
    log({ event: ev.type, message: ev.data.message_id, project: ev.data.project, fields: nulled }, 'a delivery event had values its schema cannot carry; recorded with those fields null (a bug: please report it)');
  }
  return {
    key: ev.data.message_id,
    value,
    headers: { 'event-type': ev.type, 'schema-version': String(schema.version), 'content-type': 'application/avro', project: ev.data.project },
  };
}

/** A copy of `data` with every field its record schema refuses set to null, where null is allowed. */
function withRefusedFieldsNull(type: avro.Type, data: Record<string, unknown>): { data: Record<string, unknown>; nulled: string[] } {
  const out = { ...data };
  const nulled: string[] = [];
  for (const f of (type as avro.types.RecordType).fields ?? []) {
    // a field left out takes its schema's default, if it has one
    if ((out[f.name] === undefined && f.defaultValue() !== undefined) || f.type.isValid(out[f.name]) || !f.type.isValid(null)) continue;
    out[f.name] = null;
    nulled.push(f.name);
  }
  return { data: out, nulled };
}

/** Decodes one record; null for an event type or version this build does not know (skipped). */
export function decodeEvent(headers: IHeaders | undefined, value: Buffer | null): DeliveryEvent | null {
  const type = headers?.['event-type']?.toString();
  const version = Number(headers?.['schema-version']?.toString() ?? '1');
  const writer = type ? schemas.get(`${type}@${version}`) : undefined;
  if (!writer || !value) return null;
  const reader = latest.get(writer.name)!;
  const data = reader === writer ? writer.type.fromBuffer(value) : reader.type.fromBuffer(value, reader.type.createResolver(writer.type));
  return { type, version, data } as DeliveryEvent;
}
