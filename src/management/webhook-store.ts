// Webhooks in the control database and their signing secrets. A signing secret is
// "whsec_" + base64 of 32 random bytes (the Standard Webhooks format); it is stored only sealed
// (aad.signingSecret(webhook id)), as the whole "whsec_..." string, and shown once: in the creation
// response or the rotation response. After a rotation the previous secret gets an expires_at and
// keeps signing beside the new one until then, so receivers can switch over without a gap.
//
// A webhook may sign with an ed25519 key pair instead (Standard Webhooks scheme v1a): the secret key
// ("whsk_...") is sealed exactly like a whsec_ secret and never shown; the public key ("whpk_...")
// is stored beside it in clear and is part of the webhook record. Rotation is the same for both
// schemes, and may move from one to the other: the outgoing key signs until its expiry either way.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { aad, type SecretBox } from '../lib/secret-box.js';
import { iso } from '../http/index.js';
import { healthyCircuit, newEd25519Key, type CircuitView, type replayOffer } from '../delivery/index.js';
import type { WebhookEvent } from './webhook-input.js';
import type { RowFilter, WebhookOrdering } from '../outbox/index.js';

export interface WebhookRow {
  id: string;
  project_ref: string;
  name: string;
  schema_name: string;
  table_name: string;
  events: WebhookEvent[];
  update_columns: string[] | null;
  url: string;
  headers: Record<string, string>;
  timeout_ms: number;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
  secret_created_at: Date | null;
  previous_secret_expires_at: Date | null;
  /** scheme and public key of the current signing key */
  signature_scheme: SignatureScheme | null;
  public_key: string | null;
  rate_limit: number | null;
  ordering: WebhookOrdering;
  max_in_flight: number | null;
  filter: RowFilter | null;
  columns: string[] | null;
  template: unknown;
  /** 'failing' when the service disabled it (endpoint protection), else null */
  disabled_reason: string | null;
  disabled_at: Date | null;
  disabled_failing_since: Date | null;
}

/** v1: HMAC-SHA256 with a shared whsec_ secret; v1a: ed25519, verified with the whpk_ public key. */
export type SignatureScheme = 'v1' | 'v1a';

/** What the dispatcher knows of the webhook's endpoint (delivery/endpoints/view.ts). */
export interface EndpointExtras {
  circuit: CircuitView;
  replay_offer?: Awaited<ReturnType<typeof replayOffer>>;
}

/** The webhook record every route returns (never a secret). */
export function webhookRecord(w: WebhookRow, extras?: EndpointExtras) {
  return {
    id: w.id,
    name: w.name,
    table: `${w.schema_name}.${w.table_name}`,
    events: w.events,
    update_columns: w.update_columns,
    url: w.url,
    headers: w.headers,
    timeout_ms: w.timeout_ms,
    enabled: w.enabled,
    rate_limit: w.rate_limit,
    ordering: w.ordering,
    max_in_flight: w.max_in_flight,
    filter: w.filter,
    columns: w.columns,
    template: w.template ?? null,
    disabled_reason: w.disabled_reason,
    disabled_at: iso(w.disabled_at),
    disabled_failing_since: iso(w.disabled_failing_since),
    circuit: extras?.circuit ?? healthyCircuit(w.id),
    ...(extras?.replay_offer ? { replay_offer: extras.replay_offer } : {}),
    signature_scheme: w.signature_scheme ?? 'v1',
    public_key: w.public_key,
    signing_secret_created_at: iso(w.secret_created_at),
    previous_secret_expires_at: iso(w.previous_secret_expires_at),
    created_at: iso(w.created_at),
    updated_at: iso(w.updated_at),
  };
}

const SELECT = `
  select w.*,
         (select max(s.created_at) from webhook_signing_secrets s where s.webhook_id = w.id and s.expires_at is null) as secret_created_at,
         (select s.scheme from webhook_signing_secrets s where s.webhook_id = w.id and s.expires_at is null order by s.created_at desc limit 1) as signature_scheme,
         (select s.public_key from webhook_signing_secrets s where s.webhook_id = w.id and s.expires_at is null order by s.created_at desc limit 1) as public_key,
         (select max(s.expires_at) from webhook_signing_secrets s where s.webhook_id = w.id and s.expires_at > now()) as previous_secret_expires_at
    from webhooks w`;

type Q = Pick<pg.ClientBase, 'query'>;

export async function listWebhooks(q: Q, ref: string): Promise<WebhookRow[]> {
  return (await q.query(`${SELECT} where w.project_ref = $1 order by w.created_at, w.id`, [ref])).rows;
}

export async function getWebhook(q: Q, ref: string, id: string, lock = false): Promise<WebhookRow | undefined> {
  const r = await q.query(`${SELECT} where w.project_ref = $1 and w.id = $2${lock ? ' for update of w' : ''}`, [ref, id]);
  return r.rows[0];
}

export interface WebhookFields {
  name: string;
  schema: string;
  table: string;
  events: WebhookEvent[];
  /** null: every UPDATE fires; else only an UPDATE that changes one of these columns */
  update_columns: string[] | null;
  url: string;
  headers: Record<string, string>;
  timeout_ms: number;
  enabled: boolean;
  /** requests per second at most, across all dispatchers; null: no limit */
  rate_limit: number | null;
  /** 'row': delivered in commit order per row (docs/delivery.md, "Ordered delivery") */
  ordering: WebhookOrdering;
  /** attempts in flight at most per dispatcher process; null: the adaptive window alone */
  max_in_flight: number | null;
  /** the row filter (src/outbox/row-filter.ts); null: every change */
  filter: RowFilter | null;
  /** payload shaping: the columns a message carries (null: all), and the body template (null: the row-change payload) */
  columns: string[] | null;
  template: unknown;
}

export async function insertWebhook(q: Q, ref: string, id: string, f: WebhookFields): Promise<void> {
  await q.query(
    `insert into webhooks (id, project_ref, name, schema_name, table_name, events, url, headers, timeout_ms, enabled, update_columns, rate_limit, ordering, max_in_flight, filter, columns, template)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
    [id, ref, f.name, f.schema, f.table, f.events, f.url, JSON.stringify(f.headers), f.timeout_ms, f.enabled, f.update_columns, f.rate_limit, f.ordering, f.max_in_flight, f.filter === null ? null : JSON.stringify(f.filter), f.columns, f.template === null || f.template === undefined ? null : JSON.stringify(f.template)],
  );
}

export async function updateWebhook(q: Q, ref: string, id: string, f: WebhookFields): Promise<void> {
  await q.query(
    `update webhooks set name = $3, schema_name = $4, table_name = $5, events = $6, url = $7, headers = $8, timeout_ms = $9,
            enabled = $10, update_columns = $11, rate_limit = $12, ordering = $13, max_in_flight = $14, filter = $15, columns = $16, template = $17, updated_at = now(),
            -- enabled again (by the owner): no longer disabled by the service
            disabled_reason = case when $10 then null else disabled_reason end,
            disabled_at = case when $10 then null else disabled_at end,
            disabled_failing_since = case when $10 then null else disabled_failing_since end
      where project_ref = $1 and id = $2`,
    [ref, id, f.name, f.schema, f.table, f.events, f.url, JSON.stringify(f.headers), f.timeout_ms, f.enabled, f.update_columns, f.rate_limit, f.ordering, f.max_in_flight, f.filter === null ? null : JSON.stringify(f.filter), f.columns, f.template === null || f.template === undefined ? null : JSON.stringify(f.template)],
  );
}

export async function deleteWebhook(q: Q, ref: string, id: string): Promise<WebhookRow | undefined> {
  const w = await getWebhook(q, ref, id, true);
  if (w) await q.query('delete from webhooks where project_ref = $1 and id = $2', [ref, id]);
  return w;
}

export const newSigningSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/**
 * Stores a new current signing key. For v1 it returns the whsec_ secret: the only time it is in
 * clear outside the dispatcher. For v1a nothing secret is returned (the public key is in the record).
 */
export async function addSigningSecret(q: Q, box: SecretBox, webhookId: string, scheme: SignatureScheme = 'v1'): Promise<string | undefined> {
  const key = scheme === 'v1a' ? newEd25519Key() : { secretKey: newSigningSecret(), publicKey: null };
  await q.query('insert into webhook_signing_secrets (webhook_id, secret_enc, scheme, public_key) values ($1, $2, $3, $4)', [
    webhookId,
    box.seal(key.secretKey, aad.signingSecret(webhookId)),
    scheme,
    key.publicKey,
  ]);
  return scheme === 'v1' ? key.secretKey : undefined;
}

/**
 * Rotation: the current secret expires after the grace period, secrets already past their expiry
 * are removed, and a new current secret is issued.
 */
export async function rotateSigningSecret(q: Q, box: SecretBox, webhookId: string, graceMs: number, scheme: SignatureScheme): Promise<string | undefined> {
  await q.query('delete from webhook_signing_secrets where webhook_id = $1 and expires_at <= now()', [webhookId]);
  await q.query(
    `update webhook_signing_secrets set expires_at = now() + make_interval(secs => $2::double precision / 1000)
      where webhook_id = $1 and expires_at is null`,
    [webhookId, graceMs],
  );
  return addSigningSecret(q, box, webhookId, scheme);
}
