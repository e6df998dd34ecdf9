// The sparse phase: a platform's typical project is neither silent nor busy. Each of the run's
// hundred projects gets one message a minute, at a random moment of the minute, written through a
// connection that stays open (as an application's pool would), with base.http_request to the
// receiver. The service runs with its default CAPTURE_IDLE_AFTER (10 min), so such a project is
// never stopped as idle: what it costs is a running connector, at the speed the supervisor chooses
// for its traffic (src/outbox/capture-speed.ts). Measured after a warm-up long enough for the
// speeds to settle: CPU of every process per project (ms/s), and commit -> receipt latency of the
// measured messages. Targets: at most 5 ms/s per project, p99 at most 1.5 s. The first message of
// each project wakes its stopped connector (the projects were idle), through a connection that
// stays open: its commit -> receipt is the wake latency (target: under a second).
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { measured, PATH_PROCESSES, type Phase, type PhaseCtx } from './phases.js';
import { percentile, round } from './report.js';

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface SparseOptions {
  databaseUrls: string[];
  /** the receiver's URL for these messages */
  url: string;
  warmupSeconds: number;
  seconds: number;
  /** sequence numbers of this phase start here (the receiver keys receipts by them) */
  firstSeq: number;
  /** counts of the projects' connectors by state and speed, at the end */
  speeds: () => Promise<Record<string, number>>;
}

export async function sparsePhase(ctx: PhaseCtx, o: SparseOptions): Promise<Phase> {
  const clients = await Promise.all(
    o.databaseUrls.map(async (url) => {
      const c = new pg.Client({ connectionString: url });
      c.on('error', () => {});
      await c.connect();
      return c;
    }),
  );
  let seq = o.firstSeq;
  const committed = new Map<number, { at: number; measured: boolean; first: boolean; db: string }>();
  let measuring = false;
  let stop = false;
  let failedSends = 0;
  // each project: one message a minute, at a random moment of each minute
  const loops = clients.map(async (c, i) => {
    const db = decodeURIComponent(new URL(o.databaseUrls[i]).pathname.slice(1));
    const start = Date.now();
    for (let minute = 0, first = true; !stop; minute++) {
      const due = start + minute * 60_000 + Math.random() * 60_000;
      while (!stop && Date.now() < due) await sleep(Math.min(1000, due - Date.now()));
      if (stop) break;
      const s = seq++;
      try {
        await c.query(`select base.http_request('POST', $1, '{}'::jsonb, jsonb_build_object('record', jsonb_build_object('seq', $2::bigint)))`, [o.url, s]);
        committed.set(s, { at: now(), measured: measuring, first, db });
        first = false;
      } catch {
        failedSends++;
      }
    }
  });
  try {
    ctx.log(`  ${clients.length} projects, one message a minute each; warming up ${o.warmupSeconds} s (connectors wake, then settle at their speed)…`);
    // measured too: the wakes of the hundred stopped connectors, and their first runs, land here
    const w = await measured(ctx, async () => (await sleep(o.warmupSeconds * 1000), {}));
    ctx.log(`  warm-up speeds: ${JSON.stringify(await o.speeds())}; measuring ${o.seconds} s…`);
    const d = await measured(ctx, async () => {
      measuring = true;
      await sleep(o.seconds * 1000);
      measuring = false;
      return {};
    });
    stop = true;
    await Promise.all(loops);
    const speeds = await o.speeds();
    // the last messages of the window arrive within a few seconds
    const wanted = [...committed.entries()].filter(([, v]) => v.measured).map(([s]) => s);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && wanted.some((s) => !ctx.receipts.at.has(s))) await sleep(200);
    const firsts = [...committed.entries()].filter(([s, v]) => v.first && ctx.receipts.at.has(s)).map(([s, v]) => ctx.receipts.at.get(s)! - v.at).sort((a, b) => a - b);
    const latencies = wanted.filter((s) => ctx.receipts.at.has(s)).map((s) => ctx.receipts.at.get(s)! - committed.get(s)!.at).sort((a, b) => a - b);
    const wall = d.cpu_s.wall_s;
    // CPU of every process on the message path per project (ms/s), in all and process by process
    const perProjectCpu = (cpu: Record<string, number>) => ({
      ms_per_s_per_project: round((PATH_PROCESSES.reduce((n, k) => n + (cpu[k] ?? 0), 0) * 1000) / cpu.wall_s / clients.length, 2),
      per_project_by_process: Object.fromEntries(PATH_PROCESSES.map((k) => [k, round(((cpu[k] ?? 0) * 1000) / cpu.wall_s / clients.length, 3)])),
    });
    const measuredCpu = perProjectCpu(d.cpu_s);
    return {
      figure: measuredCpu.ms_per_s_per_project,
      detail: {
        projects: clients.length,
        seconds: wall,
        messages_measured: wanted.length,
        delivered: latencies.length,
        missing: wanted.length - latencies.length,
        failed_sends: failedSends,
        latency_ms: latencies.length
          ? { p50: round(percentile(latencies, 50)), p95: round(percentile(latencies, 95)), p99: round(percentile(latencies, 99)), max: round(latencies[latencies.length - 1]) }
          : null,
        // each wake, to lay beside the service's and Connect's logs: database, commit and receipt (epoch ms)
        wakes: [...committed.entries()]
          .filter(([, v]) => v.first)
          .map(([s, v]) => ({ db: v.db, committed_at: Math.round(v.at), received_at: ctx.receipts.at.has(s) ? Math.round(ctx.receipts.at.get(s)!) : null })),
        wake_latency_ms: firsts.length
          ? { n: firsts.length, p50: round(percentile(firsts, 50)), p95: round(percentile(firsts, 95)), p99: round(percentile(firsts, 99)), max: round(firsts[firsts.length - 1]) }
          : null,
        ...measuredCpu,
        connectors_at_end: speeds,
        // the warm-up: each project's wake (its first message) and its connector's first run, CPU
        // of every process per project (ms/s) and in all (s)
        warmup: { seconds: w.cpu_s.wall_s, ...perProjectCpu(w.cpu_s), cpu_s: w.cpu_s },
        cpu_s: d.cpu_s,
      },
    };
  } finally {
    stop = true;
    await Promise.allSettled(loops);
    await Promise.allSettled(clients.map((c) => c.end()));
  }
}
