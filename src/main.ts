// Wiring only: configuration → ports → stack → context → roles (api, dispatcher, projector) →
// signals. Stopping: the first SIGTERM/SIGINT drains and leaves cleanly (shutdown.ts), a second
// one exits at once.
import { loadConfig, ConfigError, redactedConfig } from './config.js';
import { closeContext, createContext, resolveInfrastructure } from './create-context.js';
import { buildServer, healthReport } from './http/index.js';
import { accessVerifiers, registerRoutes } from './routes.js';
import { createLogger } from './lib/logger.js';
import { busyPorts, type PortNeed } from './lib/ports.js';
import { onStopSignals, watchParent } from './lib/shutdown.js';
import { startWorkers, type Worker } from './delivery/index.js';
import { bootstrapDevProject, firstRunGuide } from './admin/index.js';
import { devMailSinkEnabled, startDevMailSink, closeEmailTransports } from './email/index.js';
import { refreshEnabledOutboxes, watchDebeziumVersion } from './outbox/index.js';
import { startMetricsServer } from './lib/metrics.js';

async function main() {
  let cfg;
  try {
    cfg = loadConfig();
  } catch (e) {
    console.error(e instanceof ConfigError ? e.message : e);
    process.exit(2);
  }

  // Before anything joins a consumer group or starts the stack: a busy port is one line and exit 2.
  const ports: PortNeed[] = [];
  if (cfg.ROLES.includes('api')) ports.push({ what: 'API', key: 'PORT', host: cfg.HOST, port: cfg.PORT });
  if (cfg.METRICS_PORT !== undefined) ports.push({ what: 'metrics', key: 'METRICS_PORT', host: cfg.METRICS_HOST, port: cfg.METRICS_PORT });
  if (devMailSinkEnabled(cfg)) ports.push({ what: 'development mail sink', key: 'DEV_MAIL_SINK_PORT', host: '127.0.0.1', port: cfg.DEV_MAIL_SINK_PORT });
  const busy = await busyPorts(ports);
  if (busy.length > 0) {
    for (const line of busy) console.error(line);
    process.exit(2);
  }

  const log = createLogger(cfg.LOG_LEVEL, { format: cfg.LOG_FORMAT });
  log.debug({ config: redactedConfig(cfg) }, 'configuration');

  // A signal during start-up exits at once (nothing is in flight yet; the stack keeps running).
  const running: { stop?: (signal: string) => Promise<void> } = {};
  onStopSignals(log, (signal) => {
    if (running.stop) return void running.stop(signal);
    log.info({ signal }, 'stopped during start-up');
    process.exit(130);
  });

  const infra = await resolveInfrastructure(cfg, log);
  const ctx = await createContext(cfg, log, infra);
  const dev = await bootstrapDevProject(ctx);

  // before the workers, so mail queued while we were down finds the sink listening
  const mailSink = await startDevMailSink(ctx);
  // a consumer crashed for good leaves the process alive but idle: exit, so the supervisor restarts it
  const workers: Worker[] = await startWorkers(ctx, cfg.ROLES, (err, worker) => {
    log.fatal({ err, worker }, 'consumer crashed and will not restart; exiting');
    process.exit(1);
  });
  const app = cfg.ROLES.includes('api') ? await buildServer({ logger: log, publicUrl: cfg.publicUrl, trustProxy: cfg.TRUST_PROXY, access: accessVerifiers(ctx) }) : null;
  if (app) {
    await registerRoutes(app, ctx);
    await app.listen({ host: cfg.HOST, port: cfg.PORT });
    // development defaults are for one machine: said loudly when the API is reachable from others
    if (cfg.APP_ENV !== 'production' && !isLoopbackHost(cfg.HOST)) {
      log.warn(
        { APP_ENV: cfg.APP_ENV, HOST: cfg.HOST },
        `APP_ENV=${cfg.APP_ENV} on a non-loopback address: development defaults are reachable from the network (${mailSink ? 'the mail sink at /dev/mail lists every project\'s mail; ' : ''}loopback targets allowed, http issuers accepted); set APP_ENV=production for anything but a developer's machine`,
      );
    }
  }

  const metrics = cfg.METRICS_PORT !== undefined ? await startMetricsServer(cfg.METRICS_HOST, cfg.METRICS_PORT, () => healthReport(ctx)) : null;
  if (metrics) log.info(`metrics on http://${cfg.METRICS_HOST}:${metrics.port}/metrics, the detailed health report (per project) on /health`);

  // in the background: connectors and schemas of projects enabled by an older build pick up this one's
  // and which Debezium Connect runs, now and whenever Connect comes back (service.ts)
  const debezium = watchDebeziumVersion(ctx);
  const refreshing = Promise.all([debezium.first, refreshEnabledOutboxes(ctx).catch((err) => log.error({ err }, 'refreshing enabled outboxes failed'))]);

  running.stop = async (signal: string) => {
    log.info({ signal, drain_timeout_ms: cfg.SHUTDOWN_DRAIN_TIMEOUT }, 'shutting down: no new work; finishing deliveries in flight (a second signal stops at once)');
    const t0 = Date.now();
    // the drain bound, plus time to commit, leave the groups and close the pools
    const force = setTimeout(() => {
      log.error('shutdown did not finish in time; exiting');
      process.exit(1);
    }, cfg.SHUTDOWN_DRAIN_TIMEOUT + 15_000);
    force.unref();
    try {
      await app?.close();
      // consumers finish in-flight attempts (up to SHUTDOWN_DRAIN_TIMEOUT), commit and leave their groups
      await Promise.all(workers.map((w) => w.stop()));
      debezium.stop();
      await refreshing;
      closeEmailTransports(ctx);
      await mailSink?.stop();
      await metrics?.close();
      await closeContext(ctx);
      log.info({ ms: Date.now() - t0 }, 'stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  // started by npm, whose death (kill -9) would orphan us: stop as if signalled
  if (process.env.npm_lifecycle_event) watchParent(() => void running.stop?.('parent exited'));

  const { body } = await healthReport(ctx);
  const parts = Object.entries(body.checks)
    .filter(([k]) => k !== 'connectors' && k !== 'supervisor')
    .map(([k, v]) => `${k}: ${(v as { ok: boolean }).ok ? 'healthy' : 'UNHEALTHY'}`);
  log.info(`service ready — roles ${cfg.ROLES.join(', ')}; ${parts.join(', ')}`);
  if (app) log.info(`API listening on ${cfg.publicUrl} (docs at ${cfg.publicUrl}/docs, health at ${cfg.publicUrl}/health)`);
  if (dev && app) {
    const mail = mailSink ? `${cfg.publicUrl}/dev/mail` : null;
    console.log(firstRunGuide({ dev, api: cfg.publicUrl, mailUrl: mail, dashboardUrl: `${cfg.publicUrl}/dashboard/` }));
  }
}

main().catch((err) => {
  console.error('failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});

/** Whether HOST binds only this machine (localhost, 127.0.0.0/8, ::1). */
function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\./.test(h);
}
