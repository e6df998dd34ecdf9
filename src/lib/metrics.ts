// Prometheus metrics of this process (prom-client), served on METRICS_PORT by a small HTTP server
// of its own, so dispatcher-only processes (no API) are scraped the same way and /metrics is never
// reachable through the public API port. Labels are bounded sets (kind, outcome, route template,
// status class): never a project ref, a target URL or anything a customer controls.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'integrations_' });

export const deliveryAttempts = new Counter({
  name: 'integrations_delivery_attempts_total',
  help: 'Delivery attempts made by this process, by kind (webhook, http, email) and outcome (delivered, failed, dead)',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

export const deliveryAttemptSeconds = new Histogram({
  name: 'integrations_delivery_attempt_duration_seconds',
  help: 'Duration of one delivery attempt (request to answer, or to timeout)',
  labelNames: ['kind', 'outcome'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const deliveryLatencySeconds = new Histogram({
  name: 'integrations_delivery_latency_seconds',
  help: 'From the message being enqueued (its transaction) to the end of its first attempt',
  labelNames: ['kind'] as const,
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [registry],
});

export const httpRequests = new Counter({
  name: 'integrations_http_requests_total',
  help: 'API requests answered, by method, route template and status class',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const connectorRestarts = new Counter({
  name: 'integrations_connector_restarts_total',
  help: 'Restarts made by the connector supervisor: failed connector tasks restarted (kind=task), connectors missing from Kafka Connect registered again (kind=reregistered)',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const connectorStates = new Gauge({
  name: 'integrations_connectors',
  help: 'Outbox connectors by supervised state (running, idle, restarting, failing, waiting_for_database, missing), as of the last check of the supervising process (other processes report 0)',
  labelNames: ['state'] as const,
  registers: [registry],
});

export const slotRetainedBytesMax = new Gauge({
  name: 'integrations_replication_slot_retained_wal_bytes_max',
  help: "Largest WAL retained by any project's replication slot (bytes), as of the supervisor's last slot reading",
  registers: [registry],
});

export const slotCaptureLagSecondsMax = new Gauge({
  name: 'integrations_capture_lag_seconds_max',
  help: 'Largest capture lag of any project (seconds): the walsender write lag while its connector reads, or how long changes have waited since its connector stopped reading',
  registers: [registry],
});

export const endpointCircuitTransitions = new Counter({
  name: 'integrations_endpoint_circuit_transitions_total',
  help: 'Circuit breaker transitions made by this process, by the state entered (open, half_open, closed)',
  labelNames: ['to'] as const,
  registers: [registry],
});

export const endpointCircuits = new Gauge({
  name: 'integrations_endpoint_circuits',
  help: 'Endpoints (webhooks, http target hosts) by circuit state other than closed, as of this process\'s last reading',
  labelNames: ['state'] as const,
  registers: [registry],
});

export const endpointHeldMessages = new Gauge({
  name: 'integrations_endpoint_held_messages',
  help: 'Messages held for their endpoint (circuit open or rate limit), as of this process\'s last reading',
  registers: [registry],
});

export const endpointHolds = new Counter({
  name: 'integrations_endpoint_holds_total',
  help: 'Messages this process held instead of attempting, by reason (circuit, rate_limit, concurrency)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const endpointWindowSize = new Histogram({
  name: 'integrations_endpoint_window',
  help: "Slow start (endpoints/window.ts): an endpoint's window (attempts it may have in flight in this process) each time an attempt is let through",
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000],
  registers: [registry],
});

export const endpointWindowWaits = new Counter({
  name: 'integrations_endpoint_window_waits_total',
  help: "Attempts that found their endpoint's window full: waited (without a dispatcher slot), or held because ENDPOINT_WINDOW_QUEUE already waited",
  labelNames: ['result'] as const,
  registers: [registry],
});

export const endpointWindowWaiting = new Gauge({
  name: 'integrations_endpoint_window_waiting',
  help: "Messages of this process waiting for room in their endpoint's window",
  registers: [registry],
});

export const endpointReleases = new Counter({
  name: 'integrations_endpoint_releases_total',
  help: 'Held messages put back on the outbox topic by this process, by mode (probe, paced, expire)',
  labelNames: ['mode'] as const,
  registers: [registry],
});

export const orderingBlockedKeys = new Gauge({
  name: 'integrations_ordering_blocked_keys',
  help: 'Ordering keys whose head message waits (retry ladder, endpoint hold) with later messages possibly queued behind it, as of this process\'s last reading',
  registers: [registry],
});

export const orderingQueuedMessages = new Gauge({
  name: 'integrations_ordering_queued_messages',
  help: 'Messages waiting behind the head of their ordering key, as of this process\'s last reading',
  registers: [registry],
});

export const orderingParks = new Counter({
  name: 'integrations_ordering_parks_total',
  help: 'Messages this process queued behind the head of their ordering key instead of attempting them',
  registers: [registry],
});

export const orderingAdvances = new Counter({
  name: 'integrations_ordering_advances_total',
  help: 'Heads of ordering keys that reached a final outcome, by what followed: next (a queued message went out) or drained (the key flows again)',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const idleSlotAdvances = new Counter({
  name: 'integrations_idle_slot_advances_total',
  help: "Idle projects' replication slots moved past other databases' WAL (idle capture, steps 6 and 7), by how: peek (the slot decoded, then advanced), counters (the write counters showed nothing uncaptured; advanced) or replaced (the write counters, and a new slot put in its place, no decoding)",
  labelNames: ['how'] as const,
  registers: [registry],
});

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/** GET /metrics on host:port (text exposition format); anything else is 404. */
/** The whole health report (per project), served as GET /health on the metrics port. */
export type DetailedHealth = () => Promise<{ ok: boolean; body: unknown }>;

export async function startMetricsServer(host: string, port: number, health?: DetailedHealth): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/health' && health) {
      health().then(
        ({ ok, body }) => res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
        () => res.writeHead(500, { 'content-type': 'application/json' }).end('{"code":"internal_error","message":"The health report failed; see the log."}'),
      );
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(`{"code":"not_found","message":"Only GET /metrics${health ? ' and GET /health' : ''} are served here."}`);
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
