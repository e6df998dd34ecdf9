// The backfill phase (docs/delivery.md, "Backfills"): a table of BENCH_BACKFILL_ROWS rows
// (1,000,000 by default) that exists before its webhook, backfilled at BENCH_BACKFILL_RATE rows a
// second while the application goes on writing live rows to another hooked table at
// BENCH_BACKFILL_LIVE_RATE a second. Figures: rows a second delivered (first backfill request to
// last receipt), and the live messages' commit -> receipt latency meanwhile.
import pg from 'pg';
import { measured, type Phase, type PhaseCtx } from './phases.js';
import { percentile, round } from './report.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface BackfillOptions {
  databaseUrl: string;
  rows: number;
  rate: number;
  liveRate: number;
  /** sequence numbers of the table's rows start here (the receiver keys receipts by them) */
  firstSeq: number;
  url: string;
  api: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;
  projectRef: string;
}

export async function backfillPhase(ctx: PhaseCtx, o: BackfillOptions): Promise<Phase> {
  const db = new pg.Client({ connectionString: o.databaseUrl });
  await db.connect();
  try {
    const t0 = Date.now();
    await db.query(`create table public.bench_backfill (id bigint primary key, seq bigint not null, account text not null, amount numeric(12,2) not null, note text not null)`);
    await db.query(`insert into public.bench_backfill select g, $1::bigint + g - 1, 'acct_' || (g % 997), (g % 10000) / 100.0, repeat('n', 120) from generate_series(1, $2::bigint) g`, [o.firstSeq, o.rows]);
    await db.query('vacuum (analyze) public.bench_backfill');
    ctx.log(`  ${o.rows} rows written in ${Math.round((Date.now() - t0) / 1000)} s`);
  } finally {
    await db.end();
  }
  const hook = await o.api('POST', `/v1/projects/${o.projectRef}/webhooks`, { name: 'bench-backfill', table: 'public.bench_backfill', events: ['INSERT'], url: o.url, ordering: 'row' });
  if (hook.status !== 201) throw new Error(`the backfill webhook answered ${hook.status}: ${JSON.stringify(hook.body)}`);
  let progress: Record<string, unknown> = {};
  const d = await measured(ctx, async () => {
    const started = performance.timeOrigin + performance.now();
    const b = await o.api('POST', `/v1/projects/${o.projectRef}/webhooks/${hook.body.id}/backfills`, { rate: o.rate });
    if (b.status !== 201) throw new Error(`starting the backfill answered ${b.status}: ${JSON.stringify(b.body)}`);
    // live traffic meanwhile, at a steady rate, until the backfill's rows have all arrived
    let live = true;
    const liveRuns: { first: number; count: number }[] = [];
    const liveLoop = (async () => {
      while (live) {
        const r = await ctx.gen.run(o.liveRate * 5, () => 'bench_hooked', o.liveRate);
        liveRuns.push({ first: r.first, count: r.count });
      }
    })();
    const a = await ctx.receipts.waitFor(o.firstSeq, o.rows, ctx.s.stallMs, () => true, (p) => ctx.log(`  … ${p.delivered}/${p.expected} backfilled rows delivered`));
    live = false;
    await liveLoop;
    progress = (await o.api('GET', `/v1/projects/${o.projectRef}/webhooks/${hook.body.id}/backfills/${b.body.id}`)).body;
    // the live messages' latency, over those committed while the backfill was being delivered
    const lat: number[] = [];
    for (const r of liveRuns) {
      for (let s = r.first; s < r.first + r.count; s++) {
        const c = ctx.gen.commitAt.get(s);
        const at = ctx.receipts.at.get(s);
        if (c !== undefined && c <= a.lastAt && at !== undefined) lat.push(at - c);
      }
    }
    // the last live ones arrive shortly after
    await sleep(2000);
    lat.sort((x, y) => x - y);
    return {
      rows: o.rows,
      rate_asked: o.rate,
      delivered: a.delivered,
      complete: a.complete,
      rows_per_second: a.complete ? Math.round(o.rows / ((a.lastAt - started) / 1000)) : null,
      seconds: round((a.lastAt - started) / 1000, 1),
      live_rate: o.liveRate,
      live_messages: lat.length,
      live_latency_ms: { p50: round(percentile(lat, 50)), p95: round(percentile(lat, 95)), p99: round(percentile(lat, 99)), max: round(lat.at(-1) ?? null) },
    };
  }, o.rows);
  return { figure: d.complete ? d.rows_per_second : null, detail: { ...d, backfill: progress } };
}
