// What the dispatcher reads from the control database at send time: a webhook's current URL,
// headers, timeout and signing secrets, and a project's secret values. Both go through a cache of
// DELIVERY_CONFIG_TTL (default 1 s): an update or deletion reaches queued messages at most one TTL
// later, and a burst of messages for one webhook costs one query per TTL instead of one each.
// Decrypted values live only in this process's memory.
import type { AppContext } from '../../context.js';
import { aad } from '../../lib/secret-box.js';
import { TtlCache } from '../../lib/ttl-cache.js';
import { isUuid } from '../../lib/uuid.js';

export interface WebhookConfig {
  id: string;
  project: string;
  url: string;
  headers: Record<string, string>;
  timeoutMs: number;
  enabled: boolean;
  /** requests per second at most (across all dispatchers), or null: endpoints/rate.ts */
  rateLimit: number | null;
  /** attempts in flight at most per dispatcher process, or null: adaptive only (endpoints/window.ts) */
  maxInFlight: number | null;
  /** the body template (channels/template.ts), or null: the row-change payload */
  template: unknown;
  /**
   * every key that signs now, whsec_ (v1) or whsk_ (v1a): the current one and rotated-out ones
   * still in their grace period, newest first
   */
  signingSecrets: string[];
}

type Ctx = Pick<AppContext, 'db' | 'box' | 'cfg'>;

export class DeliveryDirectory {
  readonly #webhooks: TtlCache<WebhookConfig>;
  readonly #secrets: TtlCache<string>;

  constructor(private readonly ctx: Ctx) {
    this.#webhooks = new TtlCache(ctx.cfg.DELIVERY_CONFIG_TTL);
    this.#secrets = new TtlCache(ctx.cfg.DELIVERY_CONFIG_TTL);
  }

  /**
   * A webhook's configuration; a deleted (or another project's) webhook is null. `freshMs`: do not
   * trust a cached copy older than this (0: read it now), e.g. before ending a message on what the
   * cache says.
   */
  async webhook(project: string, id: string, freshMs?: number): Promise<WebhookConfig | null> {
    if (!isUuid(id)) return null;
    if (freshMs !== undefined) this.#webhooks.delete(id, freshMs);
    const w = await this.#webhooks.get(id, (missing) => this.#loadWebhooks(missing));
    return w && w.project === project ? w : null;
  }

  /** The values of the named secrets of a project that exist; unknown names are simply absent. */
  async secrets(project: string, names: string[]): Promise<Map<string, string>> {
    const found = await this.#secrets.getMany(
      names.map((n) => `${project}\u0000${n}`),
      async (missing) => {
        const wanted = missing.map((k) => k.split('\u0000')[1]);
        const r = await this.ctx.db.query('select name, value_enc from secrets where project_ref = $1 and name = any($2)', [project, wanted]);
        return new Map(r.rows.map((row) => [`${project}\u0000${row.name}`, this.ctx.box.open(row.value_enc, aad.secret(project, row.name))]));
      },
    );
    const out = new Map<string, string>();
    for (const [k, v] of found) if (v !== null) out.set(k.split('\u0000')[1], v);
    return out;
  }

  async #loadWebhooks(ids: string[]): Promise<Map<string, WebhookConfig>> {
    const r = await this.ctx.db.query(
      `select w.id, w.project_ref, w.url, w.headers, w.timeout_ms, w.enabled, w.rate_limit, w.max_in_flight, w.template,
              coalesce(array_agg(s.secret_enc order by s.created_at desc) filter (where s.id is not null), '{}') as secrets
         from webhooks w
         left join webhook_signing_secrets s on s.webhook_id = w.id and (s.expires_at is null or s.expires_at > now())
        where w.id = any($1::uuid[])
        group by w.id`,
      [ids],
    );
    return new Map(
      r.rows.map((row) => [
        row.id,
        {
          id: row.id,
          project: row.project_ref,
          url: row.url,
          headers: row.headers ?? {},
          timeoutMs: row.timeout_ms,
          enabled: row.enabled,
          rateLimit: row.rate_limit,
          maxInFlight: row.max_in_flight,
          template: row.template ?? null,
          signingSecrets: (row.secrets as Buffer[]).map((enc) => this.ctx.box.open(enc, aad.signingSecret(row.id))),
        },
      ]),
    );
  }
}

