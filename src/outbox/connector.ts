// Per-project Debezium connectors, rendered from connectors/outbox-connector.json and managed
// through Kafka Connect's REST API. Slot and publication are created by us before the connector
// (see enable.ts) and dropped after it, so nothing committed before the connector runs is missed
// and nothing is left pinning WAL when a project goes away.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../config.js';

export interface ConnectorTarget {
  ref: string;
  databaseUrl: string;
  /** host/port as seen from Kafka Connect (differs from ours under docker-compose) */
  dbHost?: string;
  dbPort?: number;
  topic: string;
  /** the project's message prefix (base.capture.message_prefix): the only one its connector reads */
  messagePrefix: string;
}

export const slotName = (ref: string, prefix: string) => `outbox_${prefix}_${ref}`.toLowerCase().replace(/[^a-z0-9_]/g, '_').slice(0, 63);
export const publicationName = slotName;
export const connectorName = (ref: string, prefix: string) => `outbox.${prefix}.${ref}`;

/** The template's poll.interval.ms: a 'fast' connector's (capture-speed.ts). */
export function templatePollInterval(): string {
  const template = JSON.parse(readFileSync(path.join(repoRoot, 'connectors', 'outbox-connector.json'), 'utf8')) as Record<string, string>;
  return template['poll.interval.ms'] ?? '500';
}

export function renderConnectorConfig(t: ConnectorTarget, prefix: string): Record<string, string> {
  const u = new URL(t.databaseUrl);
  const vars: Record<string, string> = {
    DB_HOST: t.dbHost ?? u.hostname,
    DB_PORT: String(t.dbPort ?? (u.port || 5432)),
    DB_USER: decodeURIComponent(u.username || 'postgres'),
    DB_PASSWORD: decodeURIComponent(u.password || ''),
    DB_NAME: decodeURIComponent(u.pathname.replace(/^\//, '')),
    CONNECTOR_NAME: connectorName(t.ref, prefix).replace(/[^a-zA-Z0-9_.-]/g, '_'),
    SLOT_NAME: slotName(t.ref, prefix),
    PUBLICATION_NAME: publicationName(t.ref, prefix),
    TOPIC: t.topic,
    PROJECT_REF: t.ref,
    MESSAGE_PREFIX: t.messagePrefix,
  };
  const template = JSON.parse(readFileSync(path.join(repoRoot, 'connectors', 'outbox-connector.json'), 'utf8')) as Record<string, string>;
  return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, v.replace(/\$\{([A-Z_]+)\}/g, (_, name: string) => vars[name] ?? '')]));
}
