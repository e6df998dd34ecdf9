// Schema fragments and limits shared by the owner-facing routes (Management API, SSO management).
// Every route validates its
// params, query and body with `additionalProperties: false`: an unknown field is refused with
// 400 validation_failed rather than silently ignored, so a typo never looks like it was applied.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { UUID_PATTERN } from '../lib/uuid.js';
import { PROJECT_REF_PATTERN } from '../projects/index.js';

/** Body cap for management routes; the global default (1 MB) is kept for routes that need more. */
export const MANAGEMENT_BODY_LIMIT = 64 * 1024;
/**
 * A 16 KB secret value may need up to six JSON characters per byte (\u0001), so the secret route
 * accepts a larger body; the value's own size is checked in UTF-8 bytes after parsing.
 */
export const SECRET_BODY_LIMIT = 128 * 1024;

/** The body of every error answer (ApiError.toBody): `details` only where a code documents it. */
export const errorSchema = {
  type: 'object',
  required: ['code', 'message'],
  properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
} as const;

/** The error responses every owner-only route can give, for the OpenAPI document. */
export const errorResponses = {
  400: { description: 'validation_failed, invalid_json or a route-specific code', ...errorSchema },
  401: { description: 'unauthorized: no valid owner token', ...errorSchema },
  404: { description: 'project_not_found (missing, or another owner\'s) or a missing resource', ...errorSchema },
  413: { description: 'payload_too_large', ...errorSchema },
  415: { description: 'unsupported_media_type', ...errorSchema },
  503: { description: 'outbox_unavailable or service_unavailable (a dependency is down; try again)', ...errorSchema },
} as const;

/**
 * Text stored in a column or shown back: no control characters (no NUL, which Postgres text
 * cannot hold, no CR/LF header or log injection) and no lone UTF-16 surrogates (not valid Unicode,
 * and refused by jsonb). Ajv compiles patterns with the u flag, so the surrogate range matches only
 * unpaired halves.
 */
export const TEXT = '^[^\\u0000-\\u001f\\u007f\\ud800-\\udfff]*$';

/** False when a string holds an unpaired surrogate (the u flag makes the class match only those). */
export const wellFormed = (s: string): boolean => !/[\ud800-\udfff]/u.test(s);
/** Any text Postgres can hold (an ordering key, written by the customer's SQL): no NUL, no unpaired surrogate. */
export const STORABLE_TEXT = '^[^\\u0000\\ud800-\\udfff]*$';
/** As TEXT, but tabs and line breaks are allowed (XML documents). */
export const MULTILINE_TEXT = '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f\\ud800-\\udfff]*$';

/**
 * A free-form JSON value (metadata) that Postgres can store as jsonb: no NUL character and no
 * unpaired surrogate in any string or key. Otherwise 400 validation_failed naming the field.
 */
export function assertStorableJson(field: string, value: unknown): void {
  const bad = (s: string) => !storable(s);
  const walk = (v: unknown): boolean => {
    if (typeof v === 'string') return bad(v);
    if (Array.isArray(v)) return v.some(walk);
    if (v && typeof v === 'object') return Object.entries(v).some(([k, x]) => bad(k) || walk(x));
    return false;
  };
  if (walk(value)) throw new ApiError('validation_failed', `${field} must not contain NUL characters or unpaired surrogates.`);
}

export const planErrorResponse = { 402: { description: 'feature_not_in_plan', ...errorSchema } } as const;

/** The {ref} path parameter, alone (refParams) or beside others (`properties: { ref, id }`). */
export const ref = { type: 'string', pattern: PROJECT_REF_PATTERN, description: 'project ref' } as const;

/**
 * An id (a path parameter, a query or body field, a record's id): a canonical UUID in either case,
 * the one pattern of src/lib/uuid.ts (why that strictness: there). `format` is for the OpenAPI
 * document; the pattern, checked first, is the rule (the uuid format alone would also take a
 * `urn:uuid:` prefix).
 */
export const uuid = { type: 'string', format: 'uuid', pattern: UUID_PATTERN } as const;

export const refParams = { type: 'object', additionalProperties: false, required: ['ref'], properties: { ref } } as const;

export const noQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

export const owner = { security: [{ ownerToken: [] }] };

/**
 * Routes without a request body refuse one that carries fields, consistently with unknown fields
 * elsewhere; an absent body or `{}` is accepted so generic clients that always send JSON work.
 */
export async function refuseBody(req: FastifyRequest): Promise<void> {
  const b = req.body as unknown;
  if (b === undefined) return;
  if (b !== null && typeof b === 'object' && !Array.isArray(b) && Object.keys(b).length === 0) return;
  throw new ApiError('validation_failed', 'This route takes no request body.');
}

/** Routes whose body is optional: no body (or JSON null) is read as `{}`, before the schema checks it. */
export async function optionalBody(req: FastifyRequest): Promise<void> {
  if (req.body === undefined || req.body === null) req.body = {};
}

/** A timestamp column as ISO text (pg gives Date objects; responses should not depend on that). */
export const iso = (d: Date | string | null | undefined): string | null => (d == null ? null : new Date(d).toISOString());

export const timestamp = { type: 'string', format: 'date-time' } as const;

// Paging. Every NEW list pages with `cursor` and `limit`: the answer carries `next_cursor`, an
// opaque string (null on the last page) that the client passes back as `cursor` for the next page.
// The cursor names the last row shown (keyset paging), so pages stay stable while rows are added.
// Older lists keep their own style for their clients' sake: the audit trail `limit` + `before`
// (an id), SSO users `page` + `per_page` (docs/management-api.md, "Paging").

/** The querystring properties of a cursor-paged list (spread them into its `properties`). */
export function cursorQuery(limits: { defaultLimit: number; maxLimit: number }) {
  return {
    cursor: { type: 'string', minLength: 1, maxLength: 300, description: "the previous page's next_cursor (opaque); omit for the first page" },
    // querystrings are not coerced by this server, so the number arrives as a digit string
    limit: { type: 'string', pattern: '^[0-9]{1,3}$', description: `1 to ${limits.maxLimit}, default ${limits.defaultLimit}` },
  } as const;
}

/** The `next_cursor` property of a cursor-paged list's answer. */
export const nextCursor = { type: ['string', 'null'], description: 'pass as cursor for the next page; null on the last' } as const;

/** The page size asked for (`limit`, a digit string), or 400 validation_failed outside 1..maxLimit. */
export function pageLimit(limit: string | undefined, limits: { defaultLimit: number; maxLimit: number }): number {
  const n = limit === undefined ? limits.defaultLimit : Number(limit);
  if (n < 1 || n > limits.maxLimit) throw new ApiError('validation_failed', `querystring.limit must be between 1 and ${limits.maxLimit}`);
  return n;
}

/** The cursor naming a row: its sort key, as base64url of a JSON array of strings. */
export const encodeCursor = (key: string[]): string => Buffer.from(JSON.stringify(key)).toString('base64url');

/**
 * The sort key a cursor of encodeCursor names, when `valid` accepts it; anything else (not base64url
 * JSON, another list's cursor, a key that could not come from a row) is 400 validation_failed.
 */
/**
 * A cursor's timestamp as the listings write it (ISO 8601 in UTC, up to microseconds) and a real
 * instant: `Date.parse` alone takes forms PostgreSQL's timestamptz refuses ("12345", "March 7") and
 * rolls over days that do not exist (2020-02-30), which reached the query as a 500.
 */
export function isCursorTime(s: unknown): boolean {
  if (typeof s !== 'string' || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$/.test(s)) return false;
  const t = Date.parse(s);
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 19) === s.slice(0, 19);
}

/** Text Postgres can hold: no NUL character, no unpaired surrogate. */
export const storable = (s: string): boolean => !s.includes('\u0000') && wellFormed(s);

export function decodeCursor(cursor: string, valid: (key: unknown[]) => boolean): string[] {
  try {
    const v: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.every((x) => typeof x === 'string') && valid(v)) return v as string[];
  } catch {}
  throw new ApiError('validation_failed', 'querystring.cursor is not a cursor returned by this listing');
}
