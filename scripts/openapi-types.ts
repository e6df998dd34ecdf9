// The dashboard's types of the API's answers (web/src/api/types.gen.ts), generated from the OpenAPI
// document the server builds from its route schemas (the one GET /openapi.json serves), so the
// dashboard cannot drift from what the routes declare. `npm run gen:api-types` writes the file;
// `npm run build:web` runs it first; `--check` only says whether the file is current (exit 1 if
// not). test/unit/foundation/api-types.test.ts fails when a route changed without regenerating.
//
// The server is built without listening and without a database: registering the routes reads only
// ctx.cfg and ctx.log (handlers, which use the rest, never run), and the access checks are stand-ins
// that refuse. A route that starts reading more of the context at registration stops this script
// with the name of what it read.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig, repoRoot } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { buildServer, type ServerOptions } from '../src/http/index.js';
import { registerRoutes } from '../src/routes.js';

export const GENERATED_FILE = path.join(repoRoot, 'web/src/api/types.gen.ts');

/** Only the APIs the browser pages call: the Management API and the setup page's /v1/sso-setup. */
const INCLUDED_PATHS = /^\/v1\//;

type Schema = Record<string, unknown>;
interface Operation {
  summary?: string;
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
}

/** The OpenAPI document of the routes, as a server with a fixed configuration describes it. */
export async function openApiDocument(): Promise<OpenApiDocument> {
  // Fixed, not the environment's: the document must not depend on who runs this. The master key is
  // given so that loading the config writes no key file.
  const cfg = loadConfig({ APP_ENV: 'test', LOG_LEVEL: 'silent', PUBLIC_URL: 'http://localhost:8000', MASTER_KEY: Buffer.alloc(32).toString('base64'), DEV_MAIL_SINK: 'false' });
  const log = pino({ level: 'silent' });
  const given: Partial<AppContext> = { cfg, log };
  const ctx = new Proxy(given, {
    get(target, key) {
      if (key in target) return target[key as keyof AppContext];
      throw new Error(`openapi-types: registering the routes read ctx.${String(key)}; this script gives them only cfg and log (no database or Kafka), so read it in the handler instead`);
    },
  }) as AppContext;
  const refuse = async () => {
    throw new Error('openapi-types: no request is served');
  };
  const access: ServerOptions['access'] = { owner: refuse, 'project-owner': refuse, 'api-key': refuse, 'setup-link': refuse };
  const app = await buildServer({ logger: log, publicUrl: cfg.publicUrl, access });
  try {
    await registerRoutes(app, ctx);
    await app.ready();
    return JSON.parse(JSON.stringify(app.swagger())) as OpenApiDocument;
  } finally {
    await app.close();
  }
}

// Keywords that say nothing about the type of a value (validation limits, annotations). Any other
// keyword stops the generator, so a schema it does not understand never yields a wrong type.
const IGNORED = new Set([
  'description', 'format', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'propertyNames', 'default', 'example', 'examples', 'title',
  'readOnly', 'writeOnly', 'deprecated',
]);
const UNDERSTOOD = new Set(['type', 'enum', 'const', 'nullable', 'properties', 'required', 'additionalProperties', 'items', 'oneOf', 'anyOf', 'allOf']);

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** A literal in the dashboard's style: single quotes. */
const literal = (v: unknown) => (typeof v === 'string' ? `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(v));
const key = (k: string) => (IDENTIFIER.test(k) ? k : literal(k));
const doc = (text: unknown, pad: string) => (typeof text === 'string' && text.trim() ? `${pad}/** ${text.trim().replace(/\s+/g, ' ').replace(/\*\//g, '*\\/')} */\n` : '');
const union = (parts: string[]) => {
  const unique = [...new Set(parts)];
  return unique.length === 0 ? 'never' : unique.join(' | ');
};
/** Parenthesised when it is a union or intersection at its top level, so `[]` or `&` binds to all of it. */
function group(t: string): string {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === "'") quoted = false;
    } else if (c === "'") quoted = true;
    else if ('{(<['.includes(c)) depth++;
    else if ('})>]'.includes(c)) depth--;
    else if (depth === 0 && (c === '|' || c === '&') && t[i - 1] === ' ') return `(${t})`;
  }
  return t;
}

/** A TypeScript type for a JSON Schema (the subset the route schemas use), indented by `pad`. */
export function schemaType(schema: unknown, pad = '', where = '#'): string {
  if (schema === true || schema === undefined) return 'unknown';
  if (schema === false) return 'never';
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new Error(`openapi-types: ${where} is not a schema`);
  const s = schema as Schema;
  for (const k of Object.keys(s)) {
    if (!IGNORED.has(k) && !UNDERSTOOD.has(k)) throw new Error(`openapi-types: ${where} uses "${k}", which this generator does not turn into a type; teach it (scripts/openapi-types.ts) or simplify the schema`);
  }
  const nullable = s.nullable === true ? ['null'] : [];
  if (Array.isArray(s.enum)) return union([...s.enum.map(literal), ...nullable]);
  if ('const' in s) return union([literal(s.const), ...nullable]);
  const parts: string[] = [];
  for (const combinator of ['oneOf', 'anyOf'] as const) {
    const list = s[combinator];
    if (Array.isArray(list)) parts.push(union(list.map((x, i) => group(schemaType(x, pad, `${where}/${combinator}/${i}`)))));
  }
  if (Array.isArray(s.allOf)) parts.push(s.allOf.map((x, i) => group(schemaType(x, pad, `${where}/allOf/${i}`))).join(' & '));
  if (parts.length && s.type === undefined) return union([...parts, ...nullable]);
  if (parts.length) throw new Error(`openapi-types: ${where} combines "type" with oneOf/anyOf/allOf; not supported`);

  const types = s.type === undefined ? [] : Array.isArray(s.type) ? (s.type as string[]) : [s.type as string];
  if (types.length === 0) {
    if (s.properties || s.additionalProperties !== undefined) types.push('object');
    else if (s.items) types.push('array');
    else return 'unknown';
  }
  return union([...types.map((t) => typeOf(t, s, pad, where)), ...nullable]);
}

function typeOf(type: string, s: Schema, pad: string, where: string): string {
  switch (type) {
    case 'null':
      return 'null';
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return s.items === undefined ? 'unknown[]' : `${group(schemaType(s.items, pad, `${where}/items`))}[]`;
    case 'object':
      return objectType(s, pad, where);
    default:
      throw new Error(`openapi-types: ${where} has type "${type}"`);
  }
}

function objectType(s: Schema, pad: string, where: string): string {
  const props = (s.properties ?? {}) as Record<string, unknown>;
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const extra = s.additionalProperties;
  const names = Object.keys(props);
  if (names.length === 0) {
    if (extra === false) return 'Record<string, never>';
    return `Record<string, ${typeof extra === 'object' ? schemaType(extra, pad, `${where}/additionalProperties`) : 'unknown'}>`;
  }
  const inner = `${pad}  `;
  const lines = names.map((name) => {
    const p = props[name] as Schema;
    return `${doc(p?.description, inner)}${inner}${key(name)}${required.has(name) ? '' : '?'}: ${schemaType(p, inner, `${where}/properties/${name}`)};\n`;
  });
  const body = `{\n${lines.join('')}${pad}}`;
  // `additionalProperties: true` beside declared properties (fields passed through as they are) adds
  // nothing a page can rely on; a schema for them does.
  return typeof extra === 'object' && extra !== null ? `${body} & Record<string, ${schemaType(extra, pad, `${where}/additionalProperties`)}>` : body;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

/** The source of web/src/api/types.gen.ts for an OpenAPI document. */
export function typesSource(api: OpenApiDocument): string {
  const ops: string[] = [];
  const paths = Object.keys(api.paths).filter((p) => INCLUDED_PATHS.test(p)).sort();
  for (const p of paths) {
    for (const method of METHODS) {
      const op = api.paths[p][method];
      if (!op) continue;
      const pad = '    ';
      const statuses = Object.keys(op.responses ?? {}).filter((c) => /^2\d\d$/.test(c)).sort();
      const answers = statuses.map((code) => {
        const schema = op.responses![code].content?.['application/json']?.schema;
        // no schema: the route does not describe its answer (or has no body, like a 204)
        return `${pad}${code}: ${schema ? schemaType(schema, pad, `${method.toUpperCase()} ${p} ${code}`) : 'unknown'};\n`;
      });
      ops.push(`${doc(op.summary, '  ')}  ${literal(`${method.toUpperCase()} ${p}`)}: ${answers.length ? `{\n${answers.join('')}  }` : '{}'};\n`);
    }
  }
  return [
    '// Generated by scripts/openapi-types.ts from the OpenAPI document of the routes (GET /openapi.json):',
    '// do not edit. `npm run gen:api-types` regenerates it (npm run build:web does too); the unit test',
    '// test/unit/foundation/api-types.test.ts fails while it is out of date with the route schemas.',
    '',
    '/**',
    ' * The success answers of the API the browser pages call, by operation ("METHOD /path") and status.',
    ' * A property is optional unless the route\'s response schema lists it in `required`; `unknown` is',
    ' * an answer the route does not describe.',
    ' */',
    'export interface ApiResponses {',
    ...ops.map((o) => o.replace(/\n$/, '')),
    '}',
    '',
  ].join('\n');
}

/** What web/src/api/types.gen.ts should hold now. */
export async function generatedTypes(): Promise<string> {
  return typesSource(await openApiDocument());
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const next = await generatedTypes();
  const current = existsSync(GENERATED_FILE) ? readFileSync(GENERATED_FILE, 'utf8') : null;
  const rel = path.relative(process.cwd(), GENERATED_FILE);
  if (process.argv.includes('--check')) {
    if (current !== next) {
      console.error(`${rel} is out of date with the route schemas: run npm run gen:api-types`);
      process.exit(1);
    }
    console.log(`${rel} is up to date`);
  } else if (current !== next) {
    // written whole or not at all: a build or test reading it meanwhile never sees half a file
    mkdirSync(path.dirname(GENERATED_FILE), { recursive: true });
    writeFileSync(`${GENERATED_FILE}.tmp`, next);
    renameSync(`${GENERATED_FILE}.tmp`, GENERATED_FILE);
    console.log(`${rel} updated`);
  }
}
