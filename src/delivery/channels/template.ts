// Body templates of database webhooks (docs/delivery.md, "Payload shaping"): a JSON value whose
// strings may hold placeholders, filled from the row change at send time. No code runs: a
// placeholder is a path into a fixed set of values, nothing else.
//
//   {{type}} {{schema}} {{table}} {{occurred_at}} {{webhook_id}} {{message_id}} {{test}}
//   {{truncated}} {{truncated_columns}} {{payload}} (the default body, whole)
//   {{record}} {{record.col}} {{record.col.field}} {{record.col[0]}} {{record["a column"]}}
//   {{old_record}} and the same paths into it
//
// A string that is one placeholder and nothing else becomes the value itself (a number stays a
// number, a row stays an object; absent is null). A placeholder inside longer text is written as
// text: a string as it is, absent or null as nothing, anything else as its JSON. Object keys are
// kept as written. {{secret:NAME}} in the template is filled from the project's secrets in the
// same pass, so a row's value that looks like a placeholder is never read as one.
import { ApiError } from '../../errors.js';
import { UnknownSecretError } from './placeholders.js';

/** under MANAGEMENT_BODY_LIMIT (64 KB), so the limit is what a too-large template meets, not a 413 */
export const TEMPLATE_MAX_BYTES = 32 * 1024;
export const TEMPLATE_MAX_PLACEHOLDERS = 500;

const ROOTS = ['type', 'schema', 'table', 'occurred_at', 'webhook_id', 'message_id', 'test', 'truncated', 'truncated_columns', 'payload', 'record', 'old_record'] as const;
type Root = (typeof ROOTS)[number];
const ROW_ROOTS: readonly Root[] = ['record', 'old_record', 'payload'];

/** A path segment: an object key or an array index. */
type Segment = string | number;
export interface Placeholder {
  root: Root;
  path: Segment[];
}

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const SECRET = /^secret:[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_$]*/;

/** Parses `record.a["b c"][0]`; throws ApiError invalid_template naming the placeholder. */
export function parsePlaceholder(text: string): Placeholder | null {
  if (SECRET.test(text)) return null; // {{secret:NAME}}: substituted from the project's secrets
  const bad = (why: string) => new ApiError('invalid_template', `template: {{${text}}} ${why}.`);
  const head = IDENT.exec(text);
  if (!head || !(ROOTS as readonly string[]).includes(head[0])) {
    throw bad(`is not a placeholder; use one of ${ROOTS.map((r) => `{{${r}}}`).join(', ')}, paths such as {{record.column}}, or {{secret:NAME}}`);
  }
  const root = head[0] as Root;
  const path: Segment[] = [];
  let rest = text.slice(head[0].length);
  while (rest.length) {
    let m: RegExpExecArray | null;
    if ((m = /^\.([A-Za-z_][A-Za-z0-9_$]*)/.exec(rest))) path.push(m[1]);
    else if ((m = /^\[(\d{1,6})\]/.exec(rest))) path.push(Number(m[1]));
    else if ((m = /^\["((?:[^"\\]|\\.)*)"\]/.exec(rest))) path.push(JSON.parse(`"${m[1]}"`) as string);
    else throw bad(`has a path it cannot read at "${rest.slice(0, 20)}" (write .name, [0] or ["any name"])`);
    rest = rest.slice(m[0].length);
  }
  if (path.length && !ROW_ROOTS.includes(root)) throw bad(`has no fields (only record, old_record and payload have)`);
  return { root, path };
}

/** Calls `each` with the inside of every {{…}} of the template's strings (walked deeply; keys are kept as written, so not read). */
function eachPlaceholder(template: unknown, each: (inner: string) => void): void {
  const visit = (v: unknown): void => {
    if (typeof v === 'string') for (const m of v.matchAll(PLACEHOLDER)) each(m[1]);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') Object.values(v).forEach(visit);
  };
  visit(template);
}

/** Every placeholder of a template (strings walked deeply); throws invalid_template on a bad one. */
export function templatePlaceholders(template: unknown): Placeholder[] {
  const out: Placeholder[] = [];
  eachPlaceholder(template, (inner) => {
    const p = parsePlaceholder(inner);
    if (p) out.push(p);
  });
  return out;
}

/**
 * The secrets a template names ({{secret:NAME}}, spaces inside the braces allowed, as for every
 * placeholder), read with the grammar renderTemplate fills them by: the generic scan of
 * placeholders.ts takes no spaces, and a template saved with `{{ secret:X }}` had its secret never
 * looked up, so every delivery failed as an internal error (found by review, 2026-11-29).
 */
export function templateSecretNames(template: unknown): string[] {
  const names = new Set<string>();
  eachPlaceholder(template, (inner) => {
    if (SECRET.test(inner)) names.add(inner.slice('secret:'.length));
  });
  return [...names];
}

/**
 * Checks a template when it is saved: its size, its placeholders, and that every column it names
 * is one the message will carry (`columns`: the table's, or the webhook's `columns` when set).
 */
export function checkTemplate(template: unknown, columns: readonly string[], source: string): void {
  const size = Buffer.byteLength(JSON.stringify(template), 'utf8');
  if (size > TEMPLATE_MAX_BYTES) throw new ApiError('invalid_template', `template: ${size} bytes, over the ${TEMPLATE_MAX_BYTES}-byte limit.`);
  const ps = templatePlaceholders(template);
  if (ps.length > TEMPLATE_MAX_PLACEHOLDERS) throw new ApiError('invalid_template', `template: ${ps.length} placeholders, over the limit of ${TEMPLATE_MAX_PLACEHOLDERS}.`);
  const known = new Set(columns);
  for (const p of ps) {
    if ((p.root === 'record' || p.root === 'old_record') && p.path.length) {
      const col = p.path[0];
      if (typeof col !== 'string' || !known.has(col)) {
        throw new ApiError('column_not_found', `template: {{${p.root}.${String(col)}}}: ${JSON.stringify(col)} is not a column of ${source} (names are case-sensitive).`);
      }
    }
  }
}

/** What a template's placeholders read, for one message. */
export interface TemplateScope {
  type: string;
  schema: string;
  table: string;
  occurred_at: string;
  webhook_id: string;
  message_id: string;
  test: boolean;
  truncated: boolean;
  truncated_columns: string[];
  payload: unknown;
  record: Record<string, unknown> | null;
  old_record: Record<string, unknown> | null;
}

function lookup(scope: TemplateScope, p: Placeholder): unknown {
  let v: unknown = scope[p.root];
  for (const s of p.path) {
    if (v === null || typeof v !== 'object') return undefined;
    if (typeof s === 'number') v = Array.isArray(v) ? v[s] : undefined;
    else v = Array.isArray(v) ? undefined : Object.prototype.hasOwnProperty.call(v, s) ? (v as Record<string, unknown>)[s] : undefined;
  }
  return v;
}

const asText = (v: unknown): string => (v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v));

/**
 * Fills a template (already checked) from one message's scope and the project's secrets, in one
 * pass: a value put in is never read again, so a row's text that looks like {{secret:NAME}} stays
 * text. A secret missing from `secrets` throws UnknownSecretError (the caller looked them up).
 */
export function renderTemplate(template: unknown, scope: TemplateScope, secrets: ReadonlyMap<string, string> = new Map()): unknown {
  const fill = (inner: string): { value: unknown } | null => {
    if (SECRET.test(inner)) {
      const name = inner.slice('secret:'.length);
      const value = secrets.get(name);
      if (value === undefined) throw new UnknownSecretError(name);
      return { value };
    }
    const p = parsePlaceholder(inner);
    return p ? { value: lookup(scope, p) ?? null } : null;
  };
  const render = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const whole = /^\{\{\s*([^{}]*?)\s*\}\}$/.exec(v);
      if (whole) return fill(whole[1])?.value ?? null;
      return v.replace(PLACEHOLDER, (all, inner: string) => {
        const f = fill(inner);
        return f ? asText(f.value) : all;
      });
    }
    if (Array.isArray(v)) return v.map(render);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, render(x)]));
    return v;
  };
  return render(template);
}
