// Shapes of the Management API's answers, as the dashboard uses them.

export interface ProjectSummary {
  ref: string;
  plan: string;
  created_at: string;
  project_url: string;
}

export interface Project extends ProjectSummary {
  features: string[];
  anon_key: string;
  outbox_enabled: boolean;
  auth: { site_url: string; additional_redirect_urls: string[]; disable_signup: boolean; allow_linking: boolean };
}

export type AttributeMapping = Partial<Record<'email' | 'email_verified' | 'name' | 'first_name' | 'last_name' | 'image', string>> & {
  extra?: Record<string, string>;
};

export interface Certificate {
  sha256_fingerprint: string;
  subject: string;
  not_after: string;
}

export interface Provider {
  id: string;
  kind: 'oidc' | 'saml';
  name: string;
  enabled: boolean;
  /** made through a setup link and not activated yet */
  draft?: boolean;
  domains: string[];
  issuer?: string;
  client_id?: string;
  scopes?: string[];
  metadata_url?: string | null;
  metadata_xml?: string | null;
  idp_entity_id?: string | null;
  idp_sso_url?: string | null;
  idp_signing_certificates?: Certificate[];
  callback_url?: string;
  sp_metadata_url?: string;
  acs_url?: string;
  sp_entity_id?: string;
  attribute_mapping: AttributeMapping;
  trust_email: boolean;
  jit: boolean;
  created_at: string;
  updated_at: string;
}

export interface Webhook {
  id: string;
  name: string;
  table: string;
  events: string[];
  /** null: every UPDATE fires; else only an UPDATE changing one of these columns */
  update_columns: string[] | null;
  url: string;
  headers: Record<string, string>;
  timeout_ms: number;
  enabled: boolean;
  /** v1: HMAC-SHA256 with a shared whsec_ secret; v1a: ed25519, verified with public_key */
  signature_scheme: 'v1' | 'v1a';
  /** whpk_…: the public key of a v1a webhook, null for v1 */
  public_key: string | null;
  signing_secret_created_at?: string | null;
  previous_secret_expires_at?: string | null;
  created_at: string;
  updated_at: string;
  /** a v1 webhook's whsec_ secret: only in the creation or rotation response */
  signing_secret?: string;
  /** at most this many requests per second to the URL; null: no limit */
  rate_limit?: number | null;
  /** 'failing': the service disabled it after its endpoint kept failing; null otherwise */
  disabled_reason?: string | null;
  disabled_at?: string | null;
  /** when disabled by the service: since when its endpoint had been failing */
  disabled_failing_since?: string | null;
  circuit?: Circuit;
  /** while the service has it disabled, and in the answer that enables it: what to replay */
  replay_offer?: ReplayOffer;
}

/** The circuit breaker of an endpoint: a webhook (webhook:<id>) or a base.http_request host (host:<name>). */
export interface Circuit {
  endpoint: string;
  webhook_id: string | null;
  /** closed: sending; open: nothing is sent, messages are held; half_open: one probe is out */
  state: 'closed' | 'open' | 'half_open';
  held_messages: number;
  failures_in_window: number;
  attempts_in_window: number;
  last_error: string | null;
  last_failure_at: string | null;
  opened_at: string | null;
  next_probe_at: string | null;
  failing_since: string | null;
  probes: number;
  failed_probes: number;
}

/** The bulk replay (POST .../outbox/replay body) of what ended dead while a webhook was disabled. */
export interface ReplayOffer {
  deliveries: number;
  request: { status: 'dead'; webhook_id: string; since: string };
}

/** POST /v1/projects/{ref}/outbox/replay */
export interface ReplayResult {
  matched: number;
  replayed: number;
  not_found: number;
}

export interface Secret {
  name: string;
  created_at: string;
  updated_at: string;
}

export interface Smtp {
  host: string;
  port: number;
  user: string | null;
  sender_email: string;
  sender_name: string | null;
  tls_mode: 'starttls' | 'implicit' | 'none';
  password_set: boolean;
  created_at: string;
  updated_at: string;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'dead';

export interface Delivery {
  id: string;
  kind: 'webhook' | 'http' | 'email';
  webhook_id?: string | null;
  target: string;
  method?: string | null;
  status: DeliveryStatus;
  /** attempts in the current run (a manual retry starts a new run) */
  run: number;
  attempts: number;
  total_attempts: number;
  last_http_status?: number | null;
  last_smtp_code?: number | null;
  last_error?: string | null;
  next_attempt_at?: string | null;
  delivered_at?: string | null;
  callback: { function: string; status: string | null; error: string | null; attempts: number } | null;
  created_at: string;
  updated_at: string;
}

export interface Attempt {
  run: number;
  attempt: number;
  outcome: 'delivered' | 'failed' | 'dead';
  http_status?: number | null;
  smtp_code?: number | null;
  error?: string | null;
  response_body?: string | null;
  duration_ms?: number | null;
  started_at: string;
  finished_at?: string;
}

export interface DeliveryDetail extends Delivery {
  last_response_body?: string | null;
  attempt_history: Attempt[];
}

export interface DeliveryPage {
  deliveries: Delivery[];
  next_cursor: string | null;
}

export interface AuditEntry {
  id: string;
  /** an owner and the token used, or (for changes made with npm run admin) the operator instead */
  actor?: { owner_id: string | null; token_id: string | null; token_name: string | null; operator?: string | null; setup_link_id?: string | null };
  action: string;
  resource_type: string;
  resource_id?: string | null;
  details?: Record<string, unknown>;
  request_id?: string | null;
  created_at: string;
}

export interface User {
  id: string;
  email: string | null;
  email_confirmed_at?: string | null;
  banned_until?: string | null;
  last_sign_in_at?: string | null;
  identities: { provider_type: string; email?: string }[];
  created_at: string;
}

export interface UserPage {
  users: User[];
  total: number;
  page: number;
  per_page: number;
}


/** A project's access-token signing key (public part only). */
export interface SigningKey {
  kid: string;
  /** current signs new tokens; previous ones only verify the tokens they signed */
  status: 'current' | 'previous';
  retired_at: string | null;
  /** until when a previous key keeps verifying; null for the current key */
  valid_until: string | null;
  public_jwk: Record<string, unknown>;
}

export interface SigningKeys {
  keys: SigningKey[];
}

/** GET /v1/projects/{ref}/outbox: the project's capture (Debezium connector and replication slot). */
export interface OutboxState {
  outbox_enabled: boolean;
  connector: {
    name: string;
    /** as Kafka Connect reports it now; UNKNOWN when Connect does not answer */
    state: 'RUNNING' | 'FAILED' | 'PAUSED' | 'UNASSIGNED' | 'RESTARTING' | 'STOPPED' | 'NOT_REGISTERED' | 'UNKNOWN' | string;
    tasks: { id: number; state: string }[];
    /** what the connector supervisor last decided; null until it has looked */
    supervised_state: 'running' | 'idle' | 'restarting' | 'failing' | 'waiting_for_database' | 'missing' | null | string;
    /** restarts in a row (they drive the backoff) */
    restarts: number;
    total_restarts: number;
    last_restart_at: string | null;
    next_restart_at: string | null;
    last_failure: string | null;
    checked_at: string | null;
  } | null;
  slot: {
    retained_wal_bytes: number | null;
    pending_bytes: number | null;
    wal_status: string | null;
    safe_wal_bytes: number | null;
    capture_lag_seconds: number | null;
  } | null;
}
