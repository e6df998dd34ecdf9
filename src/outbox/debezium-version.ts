// Which Debezium the Kafka Connect in use runs, and whether it accepts what idle capture does.
//
// Idle capture (idle-capture.ts, steps 6 and 7) moves a stopped connector's slot past the offset
// Connect stored for it: it advances the slot, or replaces it by a new one (slot-swap.ts). A task
// starts by comparing its stored offset's lsn_commit with the slot's restart_lsn
// (PostgresConnection.validateLogPosition): Debezium 3.1 logs a warning and streams from the slot,
// which is what idle capture relies on; from 3.2, BaseSourceTask throws ("The connector is trying
// to read change stream starting at ...") and the task fails at every wake that follows an
// advance. The service cannot fix that from here, so it says so at start, loudly, with what to do.

/** The connector class the outbox connectors use (connectors/outbox-connector.json). */
export const POSTGRES_CONNECTOR_CLASS = 'io.debezium.connector.postgresql.PostgresConnector';

/**
 * Why this Debezium version (Connect's /connector-plugins, e.g. "3.1.2.Final") fails idle projects'
 * connectors, or null when it does not (or the version cannot be read: nothing is claimed then).
 */
export function idleCaptureHazard(version: string): string | null {
  const m = /^(\d+)\.(\d+)\./.exec(version);
  if (!m) return null;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major < 3 || (major === 3 && minor < 2)) return null;
  return (
    `Kafka Connect runs Debezium ${version}: from 3.2 a task refuses to start when its stored offset is behind its replication slot, ` +
    'which idle capture causes whenever it moves an idle project\'s slot, so those projects\' connectors would fail at their next wake. ' +
    'Run Debezium 3.1.x, or set CAPTURE_IDLE_AFTER=0 (every connector keeps running) until the connectors are configured for it (docs/operations.md, "External stack")'
  );
}
