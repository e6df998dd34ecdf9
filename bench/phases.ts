// The measurements. Each phase warms up, runs its measured set, waits for the set to arrive at the
// receiver, and returns its figure with the details that explain it (CPU per process, backlog).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { LoadGenerator, type Table } from './load.js';
import { Receipts } from './receipts.js';
import { cpuBetween, type ProcWatch } from './proc.js';
import { percentile, perSecond, round, type Bucket } from './report.js';
import type { OutboxTap } from './tap.js';

export interface Settings {
  messages: number;
  warmup: number;
  latencyRate: number;
  latencyWarmupS: number;
  stallMs: number;
}

export interface PhaseCtx {
  s: Settings;
  /** when set, the latency phase also splits latency at the outbox topic */
  tap?: OutboxTap;
  gen: LoadGenerator;
  receipts: Receipts;
  watch: ProcWatch;
  log: (line: string) => void;
}

export interface Phase {
  figure: number | null;
  detail: Record<string, unknown>;
}

const rate = (n: number, fromMs: number, toMs: number) => Math.round(n / ((toMs - fromMs) / 1000));

/**
 * Runs fn between two CPU snapshots. With `messages`, also CPU milliseconds per message for each
 * process: on a CPU-bound machine, the sum of these is what caps the rate (cores / sum).
 */
export async function measured<T extends Record<string, unknown>>(ctx: PhaseCtx, fn: () => Promise<T>, messages?: number): Promise<T & { cpu_s: Record<string, number>; peak_rss_mb: Record<string, number>; cpu_ms_per_message?: Record<string, number> }> {
  const before = ctx.watch.cpuSnapshot();
  ctx.watch.resetPhase();
  const t0 = Date.now();
  const out = await fn();
  const cpu = cpuBetween(before, ctx.watch.cpuSnapshot(), (Date.now() - t0) / 1000);
  const rss = { peak_rss_mb: ctx.watch.phasePeakMb() };
  if (!messages) return { ...out, ...rss, cpu_s: cpu };
  const perMessage = Object.fromEntries(
    Object.entries(cpu)
      .filter(([k]) => !['machine_busy_share', 'wall_s'].includes(k))
      .map(([k, v]) => [k, round((v * 1000) / messages, 3)!]),
  );
  return { ...out, ...rss, cpu_s: cpu, cpu_ms_per_message: perMessage };
}

/** commit_rate: rows committed per second into a table nobody listens to. */
export async function commitPhase(ctx: PhaseCtx): Promise<Phase> {
  await ctx.gen.run(ctx.s.warmup, () => 'bench_plain');
  const d = await measured(ctx, async () => {
    const r = await ctx.gen.run(ctx.s.messages, () => 'bench_plain');
    return { commit_rate: rate(r.count, r.startedAt, r.endedAt), seconds: round((r.endedAt - r.startedAt) / 1000, 2) };
  }, ctx.s.messages);
  return { figure: d.commit_rate, detail: d };
}

/**
 * Commits `count` rows as fast as the generator can into `table(seq)` and waits for the rows that
 * `healthy` accepts to arrive. The rate is over the whole set: first commit started → last receipt.
 */
async function flood(ctx: PhaseCtx, table: (s: number) => Table, healthy: (s: number) => boolean = () => true) {
  return measured(ctx, async () => {
    const r = await ctx.gen.run(ctx.s.messages, table);
    const commitRate = rate(r.count, r.startedAt, r.endedAt);
    ctx.log(`  committed ${r.count} rows at ${commitRate}/s; waiting for delivery…`);
    const a = await ctx.receipts.waitFor(r.first, r.count, ctx.s.stallMs, healthy, (p) => ctx.log(`  … ${p.delivered}/${p.expected} delivered`));
    // how far delivery trailed the generator when it stopped committing
    const backlogAtLastCommit = a.expected - [...range(r.first, r.count)].filter((s) => healthy(s) && (ctx.receipts.at.get(s) ?? Infinity) <= r.endedAt).length;
    return {
      delivered: a.delivered,
      expected: a.expected,
      complete: a.complete,
      rate: a.complete ? rate(a.expected, r.startedAt, a.lastAt) : null,
      generator_commit_rate: commitRate,
      backlog_at_last_commit: backlogAtLastCommit,
      drain_s_after_last_commit: a.complete ? round((a.lastAt - r.endedAt) / 1000, 2) : null,
    };
  }, ctx.s.messages);
}

function* range(first: number, count: number) {
  for (let s = first; s < first + count; s++) yield s;
}

/** Sends a warm-up set through the webhook pipeline; false when nothing arrives at all. */
export async function warmPipeline(ctx: PhaseCtx, table: Table): Promise<{ ok: boolean; detail: Record<string, unknown> }> {
  const r = await ctx.gen.run(ctx.s.warmup, () => table);
  const a = await ctx.receipts.waitFor(r.first, r.count, ctx.s.stallMs, () => true, (p) => ctx.log(`  … warm-up ${p.delivered}/${p.expected}`));
  return { ok: a.complete, detail: { delivered: a.delivered, expected: a.expected, seconds: round((a.lastAt - r.startedAt) / 1000, 2) } };
}

/** The processes of the stack and the service: what the idle figure and the whole path's CPU count. */
export const PATH_PROCESSES = ['service', 'kafka', 'connect', 'postgres'];

/**
 * Idle cost: nothing is sent for `seconds` while `idleProjects` projects (connectors stopped by the
 * supervisor) are present. The figure is the CPU of every process of the stack and the service
 * (service, Kafka, Kafka Connect, every PostgreSQL process) in ms per second, per idle project.
 * What is fixed (the service's consumer heartbeats, Kafka's own timers) is divided too: with more
 * projects the figure only falls.
 */
export async function idlePhase(ctx: PhaseCtx, seconds: number, idleProjects: () => Promise<number>): Promise<Phase> {
  const before = await idleProjects();
  const d = await measured(ctx, async () => {
    await new Promise((r) => setTimeout(r, seconds * 1000));
    return {};
  });
  const after = await idleProjects();
  const wall = d.cpu_s.wall_s;
  const msPerS = Object.fromEntries(
    Object.entries(d.cpu_s)
      .filter(([k]) => !['machine_busy_share', 'wall_s'].includes(k))
      .map(([k, v]) => [k, round((v * 1000) / wall, 1)!]),
  );
  const parts = PATH_PROCESSES;
  const total = parts.reduce((n, k) => n + (d.cpu_s[k] ?? 0), 0);
  const idle = Math.min(before, after);
  const perProject = idle > 0 ? round((total * 1000) / wall / idle, 2) : null;
  return {
    figure: perProject,
    detail: {
      idle_projects: { at_start: before, at_end: after },
      seconds: wall,
      cpu_ms_per_s: msPerS,
      stack_and_service_ms_per_s: round((total * 1000) / wall, 1),
      ms_per_s_per_idle_project: perProject,
      per_idle_project_by_process: Object.fromEntries(parts.map((k) => [k, idle > 0 ? round(((d.cpu_s[k] ?? 0) * 1000) / wall / idle, 3) : null])),
      cpu_s: d.cpu_s,
    },
  };
}

export async function e2ePhase(ctx: PhaseCtx): Promise<Phase> {
  const d = await flood(ctx, () => 'bench_hooked');
  return { figure: d.rate, detail: d };
}

/**
 * hol_penalty: the healthy targets' delivery rate while one message in a hundred goes to a target
 * that never answers, against the same traffic without it. The machine is shared, so the two are
 * measured as alternating segments (without, with, without, with, ...) of `messages / (2 * pairs)`
 * rows each, and the penalty is 1 - (sum of "with" rates) / (sum of "without" rates): slow drifts in
 * background load hit both sides alike. Each segment's rate is first commit → last healthy receipt.
 */
export async function holPhase(ctx: PhaseCtx, pairs = 5): Promise<Phase> {
  const hang = (s: number) => s % 100 === 0;
  const size = Math.max(200, Math.floor(ctx.s.messages / (2 * pairs)));
  const segment = async (withHang: boolean) => {
    const r = await ctx.gen.run(size, (s) => (withHang && hang(s) ? 'bench_hang' : 'bench_hooked'));
    const healthy = (s: number) => !(withHang && hang(s));
    const a = await ctx.receipts.waitFor(r.first, r.count, ctx.s.stallMs, healthy);
    return a.complete ? rate(a.expected, r.startedAt, a.lastAt) : null;
  };
  const d = await measured(ctx, async () => {
    const without: (number | null)[] = [];
    const withHang: (number | null)[] = [];
    for (let i = 0; i < pairs; i++) {
      without.push(await segment(false));
      withHang.push(without[i] === null ? null : await segment(true));
      ctx.log(`  pair ${i + 1}/${pairs}: healthy ${without[i]}/s without, ${withHang[i]}/s with a hanging target`);
      if (without[i] === null || withHang[i] === null) break; // stalled: the rest would stall too
    }
    const complete = without.length === pairs && [...without, ...withHang].every((x) => x !== null);
    const sum = (xs: (number | null)[]) => xs.reduce<number>((a, b) => a + (b ?? 0), 0);
    return { segment_size: size, without_rates: without, with_rates: withHang, complete, penalty: complete ? round(1 - sum(withHang) / sum(without), 3) : null, hung_requests_seen: ctx.receipts.hung };
  }, 2 * pairs * size);
  return { figure: d.penalty, detail: d };
}

/** latency at a fixed offered load; the first latencyWarmupS seconds of the stream are not counted. */
export async function latencyPhase(ctx: PhaseCtx): Promise<Phase & { buckets: Bucket[]; p: Record<string, number | null> }> {
  const warm = ctx.s.latencyRate * ctx.s.latencyWarmupS;
  let buckets: Bucket[] = [];
  const d = await measured(ctx, async () => {
    const r = await ctx.gen.run(warm + ctx.s.messages, () => 'bench_hooked', ctx.s.latencyRate);
    const first = r.first + warm;
    const a = await ctx.receipts.waitFor(first, ctx.s.messages, ctx.s.stallMs, () => true, (p) => ctx.log(`  … ${p.delivered}/${p.expected} delivered`));
    const samples: { commitAt: number; latency: number }[] = [];
    for (const s of range(first, ctx.s.messages)) {
      const at = ctx.receipts.at.get(s);
      const c = ctx.gen.commitAt.get(s);
      if (at !== undefined && c !== undefined) samples.push({ commitAt: c, latency: at - c });
    }
    buckets = perSecond(samples);
    const sorted = samples.map((x) => x.latency).sort((x, y) => x - y);
    const split = ctx.tap ? latencySplit(ctx, first) : undefined;
    const lastCommit = ctx.gen.commitAt.get(r.first + r.count - 1) ?? r.endedAt;
    return {
      offered_rate: ctx.s.latencyRate,
      achieved_commit_rate: rate(ctx.s.messages, ctx.gen.commitAt.get(first) ?? r.startedAt, lastCommit),
      late_starts: r.late,
      delivered: a.delivered,
      expected: a.expected,
      complete: a.complete,
      p50: round(percentile(sorted, 50)),
      p95: round(percentile(sorted, 95)),
      p99: round(percentile(sorted, 99)),
      max: round(sorted.at(-1) ?? null),
      split,
    };
  }, warm + ctx.s.messages);
  const ok = d.complete;
  return { figure: ok ? d.p99 : null, detail: d, buckets, p: { p50: ok ? d.p50 : null, p95: ok ? d.p95 : null, p99: ok ? d.p99 : null } };
}

/**
 * Where the time goes, per message: commit → readable by a consumer (the tap: capture by Debezium
 * and Connect) and readable → received (the dispatcher's share, its fetch included).
 */
function latencySplit(ctx: PhaseCtx, first: number) {
  const capture: number[] = [];
  const dispatch: number[] = [];
  for (const s of range(first, ctx.s.messages)) {
    const c = ctx.gen.commitAt.get(s);
    const seen = ctx.tap!.seenAt.get(s);
    const at = ctx.receipts.at.get(s);
    if (c === undefined || seen === undefined) continue;
    capture.push(seen - c);
    if (at !== undefined) dispatch.push(at - seen);
  }
  const pct = (xs: number[]) => {
    xs.sort((a, b) => a - b);
    return { n: xs.length, p50: round(percentile(xs, 50)), p95: round(percentile(xs, 95)), p99: round(percentile(xs, 99)) };
  };
  return { commit_to_consumable_ms: pct(capture), consumable_to_receipt_ms: pct(dispatch) };
}

/** The trigger that enqueues a graphile-worker job in the inserting transaction, its payload shaped like a webhook's (docs/delivery.md, "Payloads"). */
const baselineTrigger = `
  create or replace function public.bench_gw_enqueue() returns trigger language plpgsql as $$
  begin
    perform graphile_worker.add_job('deliver', jsonb_build_object(
      'type', tg_op, 'schema', tg_table_schema, 'table', tg_table_name,
      'record', to_jsonb(new), 'old_record', null,
      'occurred_at', to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::json);
    return null;
  end $$;
  drop trigger if exists bench_gw_enqueue on public.bench_gw;
  create trigger bench_gw_enqueue after insert on public.bench_gw for each row execute function public.bench_gw_enqueue();`;

export class BaselineWorker {
  child: ChildProcess | null = null;

  async start(databaseUrl: string, receiverUrl: string, concurrency: number, poolSize: number): Promise<number> {
    const child = fork(fileURLToPath(new URL('./baseline-worker.ts', import.meta.url)), [], {
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, DATABASE_URL: databaseUrl, RECEIVER_URL: receiverUrl, CONCURRENCY: String(concurrency), POOL_SIZE: String(poolSize) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`the baseline worker exited (${code}) before it was ready`)));
    });
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    try {
      await c.query(baselineTrigger);
    } finally {
      await c.end();
    }
    return child.pid!;
  }

  async stop() {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    if (child.connected) child.disconnect();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

export async function baselinePhase(ctx: PhaseCtx): Promise<Phase> {
  const w = await ctx.gen.run(ctx.s.warmup, () => 'bench_gw');
  const warm = await ctx.receipts.waitFor(w.first, w.count, ctx.s.stallMs);
  if (!warm.complete) return { figure: null, detail: { warmup: warm } };
  const d = await flood(ctx, () => 'bench_gw');
  return { figure: d.rate, detail: d };
}
