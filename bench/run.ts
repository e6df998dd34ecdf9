// npm run bench: throughput, latency, head-of-line blocking and memory of the outbox pipeline,
// side by side with a graphile-worker baseline, in one run. See docs/benchmark.md.
//
// Progress goes to stderr; stdout gets the table and, as its last line, one JSON object.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig, repoRoot } from '../src/config.js';
import { slotName } from '../src/outbox/index.js';
import { startScript } from '../src/stack/index.js';
import { BenchService, resolveStack } from './environment.js';
import { LoadGenerator, TABLES, tableDdl } from './load.js';
import { Receipts } from './receipts.js';
import { ProcWatch, pidFromFile, processAgeSeconds } from './proc.js';
import { sparsePhase } from './sparse.js';
import { backfillPhase } from './backfill.js';
import { BaselineWorker, PATH_PROCESSES, baselinePhase, commitPhase, e2ePhase, holPhase, idlePhase, latencyPhase, warmPipeline, type Phase, type PhaseCtx, type Settings } from './phases.js';
import { latencySvg, table, targetsMet, type Figures } from './report.js';
import { findProfile, summariseHeapProfile, summariseProfile } from './profile.js';
import { OutboxTap } from './tap.js';

const env = process.env;
const quick = env.BENCH_QUICK === '1';
const messages = Number(env.BENCH_MESSAGES ?? (quick ? 5000 : 50000));
const settings: Settings = {
  messages,
  warmup: Number(env.BENCH_WARMUP ?? Math.min(5000, Math.max(500, Math.round(messages / 10)))),
  latencyRate: Number(env.BENCH_LATENCY_RATE ?? 500),
  latencyWarmupS: Number(env.BENCH_LATENCY_WARMUP_S ?? 5),
  stallMs: Number(env.BENCH_STALL_MS ?? 60_000),
};
const dispatchConcurrency = Number(env.DISPATCH_CONCURRENCY ?? 256);
const generatorClients = Number(env.BENCH_CONCURRENCY ?? 16);
// equal concurrency by default, as the comparison demands; overridable to show graphile-worker at its own best
const baselineConcurrency = Number(env.BENCH_BASELINE_CONCURRENCY ?? dispatchConcurrency);
const baselinePool = Number(env.BENCH_BASELINE_POOL ?? Math.min(baselineConcurrency, 64));
const phasesWanted = new Set((env.BENCH_PHASES ?? 'idle,commit,latency,baseline,e2e,hol,sparse').split(',').map((s) => s.trim()));
// Idle projects present during the whole run (docs/benchmark.md, "Idle projects"): created first,
// their connectors stopped by the supervisor after CAPTURE_IDLE_AFTER (shortened for the run).
const idleProjects = phasesWanted.has('idle') || phasesWanted.has('sparse') ? Number(env.BENCH_IDLE_PROJECTS ?? (quick ? 20 : 100)) : 0;
const idleBatch = Number(env.BENCH_IDLE_BATCH ?? 10);
const idleSeconds = Number(env.BENCH_IDLE_SECONDS ?? 30);
const captureIdleAfter = env.BENCH_CAPTURE_IDLE_AFTER ?? '20s';

const loadAtStart = os.loadavg()[0];
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const outDir = path.join(repoRoot, '.bench', stamp);
mkdirSync(outDir, { recursive: true });

const receipts = new Receipts();
const baseline = new BaselineWorker();
let service: BenchService | null = null;
let gen: LoadGenerator | null = null;
let cleaning: Promise<void> | null = null;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    log('cleaning up: service, connector and slot, databases, topics');
    await gen?.close();
    await baseline.stop();
    receipts.stop();
    await service?.teardown(log);
  })();
  return cleaning;
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    log(`${sig}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

async function webhook(svc: BenchService, body: Record<string, unknown>): Promise<string | null> {
  const r = await svc.api('POST', `/v1/projects/${svc.project!.ref}/webhooks`, body);
  if (r.status !== 201) {
    log(`creating webhook ${body.name} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return null;
  }
  return r.body.id;
}

async function main() {
  log(`${quick ? 'quick' : 'full'} run: ${messages} messages per phase, warm-up ${settings.warmup}, ${generatorClients} generator clients, dispatcher concurrency ${dispatchConcurrency}, baseline ${baselineConcurrency}; results in ${path.relative(repoRoot, outDir)}`);
  const stack = await resolveStack(log);
  await receipts.start();
  // The service runs with the node flags of `npm start` (the heap cap), then BENCH_SERVICE_NODE_FLAGS
  // (e.g. --max-old-space-size=128, to tell V8 heap growth from retained memory; a later flag wins).
  const started = startScript();
  execFileSync(process.execPath, [path.join(repoRoot, 'scripts', 'build-service.mjs')], { stdio: 'inherit' });
  const heapProfile = env.BENCH_HEAP_PROFILE === '1';
  const nodeFlags = [
    ...started.flags,
    ...(env.BENCH_PROFILE === '1' ? ['--cpu-prof', `--cpu-prof-dir=${outDir}`] : []),
    ...(heapProfile ? ['--require', path.join(repoRoot, 'bench', 'heap-sample.cjs')] : []),
  ];
  nodeFlags.push(...(env.BENCH_SERVICE_NODE_FLAGS ?? '').split(' ').filter(Boolean));
  log(`service: node ${nodeFlags.join(' ')} ${started.entry}`);
  const serviceEnv: Record<string, string> = { DISPATCH_CONCURRENCY: String(dispatchConcurrency) };
  if (idleProjects > 0) serviceEnv.CAPTURE_IDLE_AFTER = captureIdleAfter;
  if (heapProfile) serviceEnv.BENCH_HEAP_SAMPLE_DIR = outDir;
  // the service logs at warn (its info lines cost CPU at these rates); info to see what it did
  if (env.BENCH_SERVICE_LOG_LEVEL) serviceEnv.LOG_LEVEL = env.BENCH_SERVICE_LOG_LEVEL;
  service = new BenchService(stack, path.join(outDir, 'service.log'), serviceEnv, [...nodeFlags, started.entry]);
  service.onUnexpectedExit = (e) => log(`THE SERVICE EXITED during the run (code ${e.code}, signal ${e.signal}); delivery phases after this are skipped. See service.log`);
  await service.start();
  const project = await service.createProject();
  log(`service pid ${service.child!.pid} on ${service.url}, project ${project.ref}`);

  const watch = new ProcWatch();
  watch.add({ name: 'service', pid: service.child!.pid! });
  watch.add({ name: 'receiver', pid: receipts.pid });
  for (const part of ['kafka', 'connect'] as const) {
    const pid = stack.runDir && pidFromFile(path.join(stack.runDir, `${part}.pid`));
    if (pid) watch.add({ name: part, pid });
  }
  // JVMs started moments ago (this run brought the stack up) spend the first tens of thousands of
  // messages compiling: a 500-message warm-up then measures the JIT, not the pipeline (a quick run on
  // a fresh clone saw Kafka and Connect at 1 ms of CPU per message each and p50 2 s). Warm longer.
  const connectPid = stack.runDir && pidFromFile(path.join(stack.runDir, 'connect.pid'));
  const jvmAgeS = connectPid ? processAgeSeconds(connectPid) : null;
  if (jvmAgeS !== null && jvmAgeS < 300 && env.BENCH_WARMUP === undefined && settings.warmup < 20_000) {
    log(`Kafka Connect started ${Math.round(jvmAgeS)} s ago: warming up with 20000 messages instead of ${settings.warmup}, so the JVMs are compiled before anything is measured`);
    settings.warmup = 20_000;
  }
  const pgPid = stack.runDir && pidFromFile(path.join(stack.runDir, 'postgres.pid'));
  const projectDb = new URL(project.databaseUrl).pathname.slice(1);
  const groups = { walsender: ['walsender'], project_db: [projectDb], control_db: [service.controlDb] };
  if (pgPid) watch.add({ name: 'postgres', pid: pgPid, tree: true, groups });
  watch.start();

  const db = new pg.Client({ connectionString: project.databaseUrl });
  await db.connect();
  for (const t of TABLES) await db.query(tableDdl(t));

  // webhooks first: creating the first one enables the outbox (connector and slot)
  // BENCH_ORDERING: the webhook's ordering, row (the default on a table with a primary key) or none
  const ordering = process.env.BENCH_ORDERING === 'none' ? 'none' : 'row';
  const hooked = await webhook(service, { name: 'bench', table: 'public.bench_hooked', events: ['INSERT'], url: receipts.url('/hook'), ordering });
  const hang = await webhook(service, { name: 'bench-hang', table: 'public.bench_hang', events: ['INSERT'], url: receipts.url('/hang', receipts.hangPort), timeout_ms: 2000, ordering });
  const triggers = await db.query(`select tgrelid::regclass::text as t from pg_trigger where not tgisinternal and tgrelid::regclass::text in ('bench_hooked', 'bench_hang')`);
  await db.end();
  log(`webhooks: ${hooked ?? 'none'}, ${hang ?? 'none'}; triggers on ${triggers.rows.map((r) => r.t).join(', ') || 'no table'}`);

  if (env.BENCH_CONNECTOR_OVERRIDES && hooked) {
    const overrides = JSON.parse(env.BENCH_CONNECTOR_OVERRIDES) as Record<string, string>;
    await service.overrideConnector(overrides);
    log(`connector overridden for this run: ${JSON.stringify(overrides)}`);
  }

  gen = new LoadGenerator(project.databaseUrl, generatorClients, Number(env.BENCH_NOTE_BYTES ?? 120));
  await gen.open();
  const ctx: PhaseCtx = { s: settings, gen, receipts, watch, log };
  const phases: Record<string, Phase | Record<string, unknown>> = {};
  const svc = service;
  // Each phase starts from the same state: the previous phase's dead rows (the outbox table's
  // insert-and-delete, graphile-worker's finished jobs) are vacuumed and the WAL checkpointed now,
  // not by autovacuum and the checkpointer in the middle of the next measurement. Without this
  // the e2e phase after the baseline paid for the baseline's 50,000 jobs (project-DB CPU per
  // message 0.52 instead of 0.21 ms, e2e ~30 % lower).
  // `slotsOnly`: no vacuum or checkpoint (before the idle phase: VACUUM writes catalog rows, a
  // write to the database, which wakes its connector), only the idle slots' catch-up.
  const settle = async (next: string, slotsOnly = false) => {
    const t0 = Date.now();
    const db = new pg.Client({ connectionString: project.databaseUrl });
    try {
      await db.connect();
      if (!slotsOnly) {
        await db.query('vacuum (analyze)');
        await db.query('checkpoint').catch(() => {}); // needs superuser or pg_checkpoint; best effort
        for (let i = 0; i < 120; i++) {
          const busy = await db.query("select count(*)::int as n from pg_stat_activity where backend_type = 'autovacuum worker' and datname = current_database()");
          if (busy.rows[0].n === 0) break;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
      // Idle projects' slots holding more than CAPTURE_IDLE_MAX_WAL are advanced by the supervisor
      // (idle capture, step 6), one at a time. Creating the idle projects comes due all at once
      // (each CREATE DATABASE writes its template to the WAL: ~800 MB for a hundred), and so can a
      // phase's writes; that catch-up would land in whichever phase comes next (run Q: an advance
      // ran in 18 of 52 samples of the e2e phase). Waited for here, like vacuum, so each phase
      // measures the steady state; what step 6 costs per message written is measured on its own
      // (docs/benchmark.md, "Fifth round").
      // (the bench service's slots only: another slot of the cluster is not the supervisor's to advance)
      // The stopped slots: how many hold more than the service's CAPTURE_IDLE_MAX_WAL (its own
      // parse of the environment it runs with), and what they hold (a wake decodes that before its
      // message, twice when the connector has an offset stored: src/config.ts)
      const svcCfg = loadConfig({ ...env, ...serviceEnv });
      const args = [svcCfg.CAPTURE_IDLE_MAX_WAL, slotName('', service!.topicPrefix), svcCfg.CAPTURE_IDLE_QUIET_WAL];
      const stopped = async () =>
        (
          await db.query(
            `select count(*) filter (where h > $1)::int as due, count(*) filter (where $3 > 0 and h > $3)::int as quiet_due,
                    count(*)::int as n, coalesce(avg(h), 0)::float8 as avg, coalesce(max(h), 0)::float8 as max from (
               select pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::float8 as h from pg_replication_slots
                where slot_type = 'logical' and not active and wal_status <> 'lost' and starts_with(slot_name, $2)) s`,
            args,
          )
        ).rows[0] as { due: number; quiet_due: number; n: number; avg: number; max: number };
      const first = (await stopped()).due;
      const t1 = Date.now();
      for (let n = first; n > 0 && Date.now() - t1 < 300_000; n = (await stopped()).due) await new Promise((r) => setTimeout(r, 1000));
      // Then step 7 (quiet-cluster.ts): once the cluster has been quiet for 30 s, idle slots holding
      // more than CAPTURE_IDLE_QUIET_WAL are advanced, two passes each; waited for too, or they land
      // in the phase. Given up after 90 s without progress (30 s to see the quiet, then two passes
      // a slot; a slot held by an open transaction keeps its floor) or 300 s in all.
      const quietFirst = (await stopped()).quiet_due;
      const t2 = Date.now();
      for (let n = quietFirst, best = n, progress = t2; n > 0 && Date.now() - t2 < 300_000 && Date.now() - progress < 90_000; n = (await stopped()).quiet_due) {
        if (n < best) [best, progress] = [n, Date.now()];
        await new Promise((r) => setTimeout(r, 1000));
      }
      const held = await stopped();
      const mb = (b: number) => (b / 1048576).toFixed(0);
      const caughtUp =
        (first > 0 ? `; ${first} idle slot(s) over CAPTURE_IDLE_MAX_WAL advanced in ${((t2 - t1) / 1000).toFixed(1)} s` : '') +
        (quietFirst > 0 ? `; ${quietFirst - held.quiet_due} of ${quietFirst} over CAPTURE_IDLE_QUIET_WAL emptied once quiet in ${((Date.now() - t2) / 1000).toFixed(1)} s` : '') +
        `; ${held.n} stopped slot(s) hold avg ${mb(held.avg)} MB, max ${mb(held.max)} MB`;
      log(`settled before ${next} in ${((Date.now() - t0) / 1000).toFixed(1)} s (${slotsOnly ? 'idle slots only' : 'vacuum, checkpoint'}${caughtUp})`);
    } catch (err) {
      log(`settling before ${next} failed (${(err as Error).message}); measuring anyway`);
    } finally {
      await db.end().catch(() => {});
    }
  };
  const run = async <T extends Phase>(name: string, fn: () => Promise<T>, needsService = true, settleFirst = true, before?: () => Promise<void>): Promise<T | null> => {
    if (!phasesWanted.has(name)) return null;
    if (needsService && svc.exit) {
      phases[name] = { skipped: 'the service had exited', service_exit: svc.exit };
      return null;
    }
    if (settleFirst) await settle(name);
    // after settling, which can take a while: the connector must not have stopped again meanwhile
    await before?.();
    log(`phase ${name}…`);
    const p = await fn();
    const voided = needsService && svc.exit;
    phases[name] = voided ? { ...p, figure: null, void: 'the service exited during the phase', service_exit: svc.exit } : p;
    // an interrupted run keeps what it measured so far
    writeFileSync(path.join(outDir, 'phases.json'), JSON.stringify(phases, null, 2) + '\n');
    log(`phase ${name}: ${voided ? 'void (the service exited)' : (p.figure ?? 'not measured')}`);
    return voided ? null : p;
  };

  let idle: Phase | null = null;
  if (idleProjects > 0) {
    // a cluster started by an older version of the stack may still allow 64 slots: say so up front
    const slots = new pg.Client({ connectionString: stack.adminDatabaseUrl });
    await slots.connect();
    const max = Number((await slots.query('show max_replication_slots')).rows[0].max_replication_slots);
    const used = Number((await slots.query('select count(*) as n from pg_replication_slots')).rows[0].n);
    await slots.end();
    if (max - used < idleProjects + 2) throw new Error(`${idleProjects} idle projects need as many replication slots; the cluster allows ${max} and ${used} are in use. Restart the local stack (npm run stack -- down; npm run stack -- up writes max_replication_slots = 256) or set BENCH_IDLE_PROJECTS lower`);
    log(`creating ${idleProjects} idle projects (${idleBatch} at a time; the supervisor stops each connector ${captureIdleAfter} after its outbox is enabled)…`);
    const t0 = Date.now();
    await service.idleProjects(idleProjects, idleBatch, log);
    log(`${idleProjects} idle projects in ${Math.round((Date.now() - t0) / 1000)} s`);
    for (let i = 0; i < 60 && (await svc.idleConnectors()) < idleProjects + 1; i++) await new Promise((r) => setTimeout(r, 2000));
    // Nothing is sent while idle, and the bench project's own connector stops too (it counts then).
    // Not settled first: VACUUM writes catalog rows, a write to the database, which wakes its
    // connector. But the idle slots' catch-up after creating the projects (each CREATE DATABASE
    // writes its template to the WAL) is waited for: a one-off, not what an idle project costs
    // (run Z measured 187 of step 7's advances in the phase: 2.73 ms/s per project against 1.29 in Y).
    if (phasesWanted.has('idle')) await settle('idle', true);
    idle = await run('idle', () => idlePhase(ctx, idleSeconds, () => svc.idleConnectors()), true, false);
  }
  // A delivery phase must not start on a connector the supervisor stopped between phases (with
  // idle projects CAPTURE_IDLE_AFTER is short): a few unmeasured rows wake it first.
  const wake = async (table: 'bench_hooked' = 'bench_hooked') => {
    if (idleProjects === 0) return;
    const r = await gen!.run(20, () => table);
    await receipts.waitFor(r.first, r.count, settings.stallMs, () => true, () => {});
  };

  const commit = await run('commit', () => commitPhase(ctx), false);

  let pipeline = hooked !== null && triggers.rowCount! > 0;
  if (pipeline && ['latency', 'e2e', 'hol'].some((p) => phasesWanted.has(p))) {
    log('warming the webhook pipeline…');
    const w = await warmPipeline(ctx, 'bench_hooked');
    phases.pipeline_warmup = w.detail;
    pipeline = w.ok;
    if (!pipeline) log(`the pipeline delivered ${w.detail.delivered}/${w.detail.expected} warm-up messages: skipping the webhook phases`);
  }
  let latency: Awaited<ReturnType<typeof latencyPhase>> | null = null;
  if (pipeline && phasesWanted.has('latency')) {
    if (env.BENCH_TAP !== '0') {
      ctx.tap = new OutboxTap();
      await ctx.tap.start(stack.kafkaBrokers, `${service.topicPrefix}.outbox`, `${service.topicPrefix}.bench-tap`);
    }
    latency = await run('latency', () => latencyPhase(ctx), true, true, wake);
    await ctx.tap?.stop();
    ctx.tap = undefined;
  }
  if (latency) writeFileSync(path.join(outDir, 'latency.svg'), latencySvg(latency.buckets, `commit → receipt latency at ${settings.latencyRate} msg/s offered (${messages} messages)`));

  let baselineRate: number | null = null;
  if (phasesWanted.has('baseline')) {
    const pid = await baseline.start(project.databaseUrl, receipts.url('/gw'), baselineConcurrency, baselinePool);
    watch.add({ name: 'baseline_worker', pid });
    baselineRate = (await run('baseline', () => baselinePhase(ctx), false))?.figure ?? null;
    await baseline.stop();
  }
  const e2e = pipeline ? await run('e2e', () => e2ePhase(ctx), true, true, wake) : null;
  const hol = pipeline && hang ? await run('hol', () => holPhase(ctx), true, true, wake) : null;
  // not in the default phases (a million rows take minutes): BENCH_PHASES=backfill npm run bench
  const backfill = pipeline
    ? await run('backfill', () =>
        backfillPhase(ctx, {
          databaseUrl: project.databaseUrl,
          rows: Number(env.BENCH_BACKFILL_ROWS ?? 1_000_000),
          rate: Number(env.BENCH_BACKFILL_RATE ?? 2000),
          liveRate: Number(env.BENCH_BACKFILL_LIVE_RATE ?? 100),
          firstSeq: 3_000_000_000,
          url: receipts.url('/backfill'),
          api: (m, p, b) => svc.api(m, p, b),
          projectRef: project.ref,
        }), true, true, wake)
    : null;

  // Sparse traffic on the hundred projects, with the service's default CAPTURE_IDLE_AFTER (the
  // short one of this run is only there to make them idle in minutes): restarted for it.
  let sparse: Phase | null = null;
  if (phasesWanted.has('sparse') && idleProjects > 0 && !svc.exit) {
    const idleAfter = env.BENCH_SPARSE_IDLE_AFTER ?? '10m';
    log(`restarting the service with CAPTURE_IDLE_AFTER=${idleAfter} for the sparse phase…`);
    await service.restart({ CAPTURE_IDLE_AFTER: idleAfter });
    watch.repoint('service', service.child!.pid!);
    sparse = await run('sparse', () =>
      sparsePhase(ctx, {
        databaseUrls: service!.idleProjectUrls(idleProjects),
        url: receipts.url('/sparse'),
        warmupSeconds: Number(env.BENCH_SPARSE_WARMUP ?? 100),
        seconds: Number(env.BENCH_SPARSE_SECONDS ?? 240),
        firstSeq: 2_000_000_000,
        speeds: () => service!.captureStates(),
        // settled first: the service has just restarted (its start checks every project), and the
        // earlier phases' WAL has every idle slot due for an advance; both would land in the wakes
      }), true, true);
  }

  await watch.stop();
  const serviceRss = watch.peakMb('service', true);
  const figures: Figures = {
    commit_rate: commit?.figure ?? null,
    e2e_rate: e2e?.figure ?? null,
    baseline_rate: baselineRate,
    latency_p50_ms: latency?.p.p50 ?? null,
    latency_p95_ms: latency?.p.p95 ?? null,
    latency_p99_ms: latency?.p.p99 ?? null,
    hol_penalty: hol?.figure ?? null,
    service_peak_rss_mb: serviceRss,
    kafka_peak_rss_mb: watch.peakMb('kafka'),
    connect_peak_rss_mb: watch.peakMb('connect'),
    postgres_peak_rss_mb: watch.peakMb('postgres'),
    cpu_ms_per_message: pathCpuPerMessage(e2e),
    latency_machine_busy: (latency?.detail.cpu_s as Record<string, number> | undefined)?.machine_busy_share ?? null,
    idle_ms_per_s_per_project: idle?.figure ?? null,
    sparse_ms_per_s_per_project: sparse?.figure ?? null,
    sparse_latency_p99_ms: ((sparse?.detail.latency_ms as Record<string, number> | null | undefined) ?? null)?.p99 ?? null,
    backfill_rows_per_s: backfill?.figure ?? null,
    backfill_live_latency_p99_ms: ((backfill?.detail.live_latency_ms as Record<string, number> | undefined) ?? null)?.p99 ?? null,
    wake_latency_p99_ms: ((sparse?.detail.wake_latency_ms as Record<string, number> | null | undefined) ?? null)?.p99 ?? null,
    // as measured (idle at both ends of the phase), not as asked
    idle_projects: idle ? Math.min(...Object.values((idle.detail.idle_projects as Record<string, number> | undefined) ?? { none: 0 })) : 0,
    messages,
  };
  const met = targetsMet(figures);
  const results = {
    ...figures,
    targets_met: met,
    mode: quick ? 'quick' : 'full',
    settings: { ...settings, dispatchConcurrency, generatorClients, baselineConcurrency, baselinePool, connectorOverrides: env.BENCH_CONNECTOR_OVERRIDES ?? null },
    memory: {
      baseline_worker_peak_rss_mb: watch.peakMb('baseline_worker', true),
      receiver_peak_rss_mb: watch.peakMb('receiver', true),
      kafka_lifetime_hwm_mb: watch.lifetimeHwmMb('kafka'),
      connect_lifetime_hwm_mb: watch.lifetimeHwmMb('connect'),
    },
    receiver: { duplicates: receipts.duplicates, hung: receipts.hung, unparsable: receipts.unparsable },
    service_exit: service.exit,
    phases,
    started_at: stamp,
    // the machine is shared: how busy it was around the run (1-minute load average, 2 cores)
    load_average: { at_start: loadAtStart, at_end: os.loadavg()[0] },
  };
  await cleanup();
  const prof = findProfile(outDir);
  const heap = findProfile(outDir, '.heapprofile');
  const withProfile = { ...results, ...(prof ? { service_cpu_profile: summariseProfile(prof) } : {}), ...(heap ? { service_heap_profile: summariseHeapProfile(heap) } : {}) };
  writeFileSync(path.join(outDir, 'results.json'), JSON.stringify(withProfile, null, 2) + '\n');
  process.stdout.write(`\n${table(figures, met)}\n\nresults: ${path.relative(repoRoot, outDir)}\n`);
  process.stdout.write(JSON.stringify({ ...figures, targets_met: met }) + '\n');
}

/** The whole path's CPU per delivered message in the e2e phase: service, Kafka, Connect, PostgreSQL. */
function pathCpuPerMessage(e2e: Phase | null): number | null {
  const per = e2e?.detail.cpu_ms_per_message as Record<string, number> | undefined;
  if (!per) return null;
  return Math.round(PATH_PROCESSES.reduce((n, k) => n + (per[k] ?? 0), 0) * 1000) / 1000;
}

main()
  .catch(async (e) => {
    log(`failed: ${(e as Error).stack ?? e}`);
    await cleanup();
    process.exitCode = 1;
  })
  .finally(() => setTimeout(() => process.exit(), 100).unref());
