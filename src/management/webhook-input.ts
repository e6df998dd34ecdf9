// Checks on webhook input that a JSON schema cannot express: the target URL (literal private
// addresses in every spelling are refused), the table name, and the custom headers (reserved and
// transport-managed names, placeholder syntax). Pure functions, so they are unit-tested directly.
import { checkUrlLiteral } from '../outbound/index.js';
import type { AllowList } from '../outbound/index.js';
import { ApiError } from '../errors.js';

export const TIMEOUT_MIN_MS = 100;
export const TIMEOUT_MAX_MS = 60_000;
export const URL_MAX_LENGTH = 2048;
export const MAX_HEADERS = 50;
export const HEADER_VALUE_MAX = 8192;
export const UPDATE_COLUMNS_MAX = 100;

export const WEBHOOK_SCHEMAS = ['public', 'api'] as const;
export type WebhookEvent = 'INSERT' | 'UPDATE' | 'DELETE';

/** Signature headers of Standard Webhooks: always set by the service, from the signing secret. */
const SIGNATURE_HEADERS = new Set(['webhook-id', 'webhook-timestamp', 'webhook-signature']);

/**
 * Headers the HTTP client derives from the request itself; a customer value would corrupt framing
 * (content-length, transfer-encoding), retarget the request (host) or break the connection.
 */
const TRANSPORT_HEADERS = new Set([
  'host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer',
  'expect', 'proxy-connection', 'proxy-authorization', 'http2-settings',
]);

/** RFC 9110 token: the characters a header name may contain. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/;
/** Field value: printable ASCII, spaces and tabs; never CR, LF or NUL (header injection). */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;
const PLACEHOLDER = /\{\{secret:([^}]*)\}\}/g;
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Returns the URL in the normalised spelling that was checked; store that, send that. */
export function checkWebhookUrl(input: string, allow: AllowList): string {
  if (input.length > URL_MAX_LENGTH) throw new ApiError('invalid_url', `url is longer than ${URL_MAX_LENGTH} characters.`);
  const check = checkUrlLiteral(input, allow);
  if (!check.ok) {
    throw new ApiError(check.code, check.code === 'url_not_allowed' ? `url is not allowed: ${check.reason}.` : `url is not a valid http(s) URL: ${check.reason}.`);
  }
  if (check.url.username || check.url.password) {
    // Credentials in a URL would be stored and listed in clear; headers with placeholders are not.
    throw new ApiError('invalid_url', 'url must not carry credentials; send them in a header with a {{secret:NAME}} placeholder.');
  }
  check.url.hash = '';
  return check.url.href;
}

/** Splits "schema.table"; the schema must be public or api. Existence is checked by the caller. */
export function parseTableName(input: string): { schema: (typeof WEBHOOK_SCHEMAS)[number]; table: string } {
  const dot = input.indexOf('.');
  if (dot <= 0 || dot === input.length - 1) throw new ApiError('validation_failed', 'table must be written schema.table, e.g. public.orders.');
  const schema = input.slice(0, dot);
  const table = input.slice(dot + 1);
  if (!(WEBHOOK_SCHEMAS as readonly string[]).includes(schema)) throw new ApiError('validation_failed', 'table must be in schema public or api.');
  // Postgres names are at most 63 bytes and cannot contain NUL; anything else is a possible name.
  if (Buffer.byteLength(table, 'utf8') > 63 || table.includes('\0')) throw new ApiError('table_not_found', `table ${schema}.${table.slice(0, 63)} does not exist.`);
  return { schema: schema as (typeof WEBHOOK_SCHEMAS)[number], table };
}

/** Validates custom headers; names are kept as given (HTTP names are case-insensitive anyway). */
export function checkHeaders(headers: Record<string, unknown>): Record<string, string> {
  const entries = Object.entries(headers);
  if (entries.length > MAX_HEADERS) throw new ApiError('validation_failed', `headers may hold at most ${MAX_HEADERS} entries.`);
  const seen = new Set<string>();
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (SIGNATURE_HEADERS.has(lower)) throw new ApiError('reserved_header', `The header ${lower} is set by the service (Standard Webhooks signature).`);
    if (TRANSPORT_HEADERS.has(lower)) throw new ApiError('reserved_header', `The header ${lower} is set by the HTTP client.`);
    if (!HEADER_NAME.test(name)) throw new ApiError('validation_failed', 'headers: a header name may only contain letters, digits and !#$%&\'*+-.^_`|~.');
    if (seen.has(lower)) throw new ApiError('validation_failed', `headers: ${lower} is given twice (header names are case-insensitive).`);
    seen.add(lower);
    if (typeof value !== 'string') throw new ApiError('validation_failed', `headers.${name} must be a string.`);
    if (value.length > HEADER_VALUE_MAX) throw new ApiError('validation_failed', `headers.${name} is longer than ${HEADER_VALUE_MAX} characters.`);
    if (!HEADER_VALUE.test(value)) throw new ApiError('validation_failed', `headers.${name} may only contain printable ASCII characters.`);
    for (const m of value.matchAll(PLACEHOLDER)) {
      if (!SECRET_NAME.test(m[1])) throw new ApiError('validation_failed', `headers.${name}: {{secret:NAME}} needs a name matching [A-Za-z_][A-Za-z0-9_]{0,63}.`);
    }
  }
  return headers as Record<string, string>;
}

/** A column filter only applies to UPDATE: refused (not silently kept inert) when UPDATE is not an event. */
export function checkUpdateColumnsEvents(events: WebhookEvent[], updateColumns: string[] | null): void {
  if (updateColumns && !events.includes('UPDATE')) {
    throw new ApiError('validation_failed', 'update_columns only applies to UPDATE: add UPDATE to events, or set update_columns to null.');
  }
}
