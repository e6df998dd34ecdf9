// Wiring only: configuration → stack → context → roles (api, dispatcher, projector).
import { loadConfig, ConfigError, redactedConfig } from './config.js';
import { closeContext, createContext, resolveEndpoints } from './app.js';
import { buildServer } from './http/server.js';
import { registerRoutes } from './http/routes.js';
import { healthReport } from './http/health.js';
import { createLogger } from './lib/logger.js';
import { startWorkers, type Worker } from './delivery/workers.js';
import { bootstrapDevProject } from './admin/bootstrap.js';
import { startDevMailSink } from './email/dev-sink.js';
import { closeEmailTransports } from './email/transport.js';
import { refreshEnabledOutboxes } from './outbox/service.js';
import { startMetricsServer } from './lib/metrics.js';

async function main() {
  let cfg;
  try {
    cfg = loadConfig();
  } catch (e) {
    console.error(e instanceof ConfigError ? e.message : e);
    process.exit(2);
  }
  const log = createLogger(cfg.LOG_LEVEL);
  log.debug({ config: redactedConfig(cfg) }, 'configuration');
  const endpoints = await resolveEndpoints(cfg, log);
  const ctx = await createContext(cfg, log, endpoints);
  await bootstrapDevProject(ctx);

  // before the workers, so mail queued while we were down finds the sink listening
  const mailSink = await startDevMailSink(ctx);
  // a consumer crashed for good leaves the process alive but idle: exit, so the supervisor restarts it
  const workers: Worker[] = await startWorkers(ctx, cfg.ROLES, (err, worker) => {
    log.fatal({ err, worker }, 'consumer crashed and will not restart; exiting');
    process.exit(1);
  });
  const app = cfg.ROLES.includes('api') ? await buildServer({ logger: log, publicUrl: cfg.publicUrl, trustProxy: cfg.TRUST_PROXY }) : null;
  if (app) {
    await registerRoutes(app, ctx);
    await app.listen({ host: cfg.HOST, port: cfg.PORT });
  }

  const metrics = cfg.METRICS_PORT !== undefined ? await startMetricsServer(cfg.METRICS_HOST, cfg.METRICS_PORT) : null;
  if (metrics) log.info(`metrics on http://${cfg.METRICS_HOST}:${metrics.port}/metrics`);

  const { body } = await healthReport(ctx);
  const parts = Object.entries(body.checks)
    .filter(([k]) => k !== 'connectors')
    .map(([k, v]) => `${k}: ${(v as { ok: boolean }).ok ? 'healthy' : 'UNHEALTHY'}`);
  log.info(`service ready — roles ${cfg.ROLES.join(', ')}; ${parts.join(', ')}`);
  if (app) log.info(`API listening on ${cfg.publicUrl} (docs at ${cfg.publicUrl}/docs, health at ${cfg.publicUrl}/health)`);
  // in the background: connectors and schemas of projects enabled by an older build pick up this one's
  const refreshing = refreshEnabledOutboxes(ctx).catch((err) => log.error({ err }, 'refreshing enabled outboxes failed'));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight work');
    const force = setTimeout(() => {
      log.error('shutdown took longer than 30s, exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    try {
      await app?.close();
      // consumers finish in-flight attempts, commit and leave their groups
      await Promise.all(workers.map((w) => w.stop()));
      await refreshing;
      closeEmailTransports(ctx);
      await mailSink?.stop();
      await metrics?.close();
      await closeContext(ctx);
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  console.error('failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
