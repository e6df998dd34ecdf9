// Percentiles, the per-second latency series, its SVG chart, the printed table and the targets.

export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

const round = (x: number | null, digits = 1) => (x === null ? null : Math.round(x * 10 ** digits) / 10 ** digits);

export interface Bucket {
  second: number;
  count: number;
  p50: number;
  p95: number;
  p99: number;
}

/** Latencies grouped by the second (since the first commit) in which their row committed. */
export function perSecond(samples: { commitAt: number; latency: number }[]): Bucket[] {
  if (samples.length === 0) return [];
  const t0 = Math.min(...samples.map((s) => s.commitAt));
  const groups = new Map<number, number[]>();
  for (const s of samples) {
    const k = Math.floor((s.commitAt - t0) / 1000);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(s.latency);
  }
  return [...groups.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([second, g]) => {
      g.sort((a, b) => a - b);
      return { second, count: g.length, p50: round(percentile(g, 50))!, p95: round(percentile(g, 95))!, p99: round(percentile(g, 99))! };
    });
}

/** A hand-written line chart: p50, p95 and p99 per second, on a log-free linear ms axis. */
export function latencySvg(buckets: Bucket[], title: string): string {
  const W = 900;
  const H = 420;
  const m = { l: 60, r: 120, t: 40, b: 50 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const maxX = Math.max(1, ...buckets.map((b) => b.second));
  const rawMaxY = Math.max(10, ...buckets.map((b) => b.p99));
  const step = niceStep(rawMaxY / 5);
  const maxY = Math.ceil(rawMaxY / step) * step;
  const x = (s: number) => m.l + (s / maxX) * pw;
  const y = (v: number) => m.t + ph - (v / maxY) * ph;
  const series: [keyof Bucket, string][] = [
    ['p50', '#2b8a3e'],
    ['p95', '#e8590c'],
    ['p99', '#c92a2a'],
  ];
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(title)}</text>`,
  ];
  for (let v = 0; v <= maxY; v += step) {
    out.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${y(v)}" y2="${y(v)}" stroke="#e9ecef"/>`);
    out.push(`<text x="${m.l - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`);
  }
  const xStep = niceStep(maxX / 10);
  for (let s = 0; s <= maxX; s += xStep) out.push(`<text x="${x(s)}" y="${m.t + ph + 18}" text-anchor="middle">${s}</text>`);
  out.push(`<line x1="${m.l}" x2="${m.l}" y1="${m.t}" y2="${m.t + ph}" stroke="#495057"/>`);
  out.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${m.t + ph}" y2="${m.t + ph}" stroke="#495057"/>`);
  out.push(`<text x="${m.l + pw / 2}" y="${H - 12}" text-anchor="middle">seconds since the first commit (bucketed by commit time)</text>`);
  out.push(`<text x="16" y="${m.t + ph / 2}" text-anchor="middle" transform="rotate(-90 16 ${m.t + ph / 2})">commit → receipt (ms)</text>`);
  series.forEach(([key, color], i) => {
    const pts = buckets.map((b) => `${x(b.second).toFixed(1)},${y(b[key] as number).toFixed(1)}`).join(' ');
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="1.6" points="${pts}"/>`);
    out.push(`<line x1="${W - m.r + 15}" x2="${W - m.r + 40}" y1="${m.t + 10 + i * 20}" y2="${m.t + 10 + i * 20}" stroke="${color}" stroke-width="2"/>`);
    out.push(`<text x="${W - m.r + 46}" y="${m.t + 14 + i * 20}">${key}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function niceStep(raw: number): number {
  const mag = 10 ** Math.floor(Math.log10(Math.max(raw, 1e-9)));
  const n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
}

function escapeXml(s: string) {
  return s.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);
}

export interface Figures {
  commit_rate: number | null;
  e2e_rate: number | null;
  baseline_rate: number | null;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
  latency_p99_ms: number | null;
  hol_penalty: number | null;
  service_peak_rss_mb: number | null;
  kafka_peak_rss_mb: number | null;
  connect_peak_rss_mb: number | null;
  postgres_peak_rss_mb: number | null;
  /** e2e phase: CPU of the whole path (service, Kafka, Connect, every PostgreSQL process) per delivered message */
  cpu_ms_per_message: number | null;
  /** latency phase: share of both cores busy at the offered 500/s */
  latency_machine_busy: number | null;
  /** idle phase: CPU of the stack and the service in ms per second, per idle project */
  idle_ms_per_s_per_project: number | null;
  /** sparse phase: CPU of the stack and the service in ms per second, per project sending one message a minute */
  sparse_ms_per_s_per_project: number | null;
  /** sparse phase: commit -> receipt p99 of those messages */
  sparse_latency_p99_ms: number | null;
  /** sparse phase: commit -> receipt p99 of each project's first message, which woke its stopped connector */
  wake_latency_p99_ms: number | null;
  /** backfill phase: rows a second delivered (first request to last receipt) */
  backfill_rows_per_s: number | null;
  /** backfill phase: commit -> receipt p99 of the live messages written meanwhile */
  backfill_live_latency_p99_ms: number | null;
  idle_projects: number;
  messages: number;
}

/** The targets (docs/benchmark.md, Targets); null when the figure could not be measured. */
export function targetsMet(f: Figures): Record<string, boolean | null> {
  const both = (a: number | null, b: number | null, ok: (a: number, b: number) => boolean) => (a === null || b === null ? null : ok(a, b));
  return {
    e2e_at_least_3000: both(f.e2e_rate, 0, (e) => e >= 3000),
    e2e_at_least_half_commit: both(f.e2e_rate, f.commit_rate, (e, c) => e >= 0.5 * c),
    e2e_at_least_baseline: both(f.e2e_rate, f.baseline_rate, (e, b) => e >= b),
    p99_at_most_50ms: both(f.latency_p99_ms, 0, (p) => p <= 50),
    p50_at_most_10ms: both(f.latency_p50_ms, 0, (p) => p <= 10),
    cpu_at_most_0_6ms_per_message: both(f.cpu_ms_per_message, 0, (c) => c <= 0.6),
    idle_at_most_3ms_per_s_per_project: f.idle_projects >= 100 ? both(f.idle_ms_per_s_per_project, 0, (c) => c <= 3) : null,
    hol_penalty_at_most_10pct: both(f.hol_penalty, 0, (h) => h <= 0.1),
    sparse_at_most_5ms_per_s_per_project: both(f.sparse_ms_per_s_per_project, 0, (c) => c <= 5),
    sparse_p99_at_most_1500ms: both(f.sparse_latency_p99_ms, 0, (p) => p <= 1500),
    wake_p99_under_1s: both(f.wake_latency_p99_ms, 0, (p) => p < 1000),
    service_at_most_300mb: both(f.service_peak_rss_mb, 0, (m) => m <= 300),
  };
}

export function table(f: Figures, met: Record<string, boolean | null>): string {
  const mark = (v: boolean | null) => (v === null ? 'n/a' : v ? 'met' : 'MISSED');
  const fmt = (v: number | null, unit = '') => (v === null ? 'not measured' : `${v}${unit}`);
  const rows: [string, string, string][] = [
    ['commit_rate', fmt(f.commit_rate, ' /s'), '(the limit)'],
    ['e2e_rate', fmt(f.e2e_rate, ' /s'), `≥ 3000/s: ${mark(met.e2e_at_least_3000)}; ≥ 0.5 × commit: ${mark(met.e2e_at_least_half_commit)}`],
    ['baseline_rate', fmt(f.baseline_rate, ' /s'), `e2e ≥ baseline: ${mark(met.e2e_at_least_baseline)}`],
    ['CPU per message (e2e)', fmt(f.cpu_ms_per_message, ' ms'), `≤ 0.6 ms: ${mark(met.cpu_at_most_0_6ms_per_message)}`],
    ['latency p50 @500/s', fmt(f.latency_p50_ms, ' ms'), `≤ 10 ms: ${mark(met.p50_at_most_10ms)}`],
    ['latency p95 @500/s', fmt(f.latency_p95_ms, ' ms'), ''],
    ['latency p99 @500/s', fmt(f.latency_p99_ms, ' ms'), `≤ 50 ms: ${mark(met.p99_at_most_50ms)}`],
    ['machine busy @500/s', f.latency_machine_busy === null ? 'not measured' : `${Math.round(f.latency_machine_busy * 100)} %`, ''],
    ['idle, per idle project', f.idle_ms_per_s_per_project === null ? 'not measured' : `${f.idle_ms_per_s_per_project} ms/s (${f.idle_projects} idle)`, `≤ 3 ms/s with 100: ${mark(met.idle_at_most_3ms_per_s_per_project)}`],
    ['sparse, per project (1 msg/min)', fmt(f.sparse_ms_per_s_per_project, ' ms/s'), `≤ 5 ms/s: ${mark(met.sparse_at_most_5ms_per_s_per_project)}`],
    ['sparse latency p99', fmt(f.sparse_latency_p99_ms, ' ms'), `≤ 1500 ms: ${mark(met.sparse_p99_at_most_1500ms)}`],
    ['wake from idle p99 (open connection)', fmt(f.wake_latency_p99_ms, ' ms'), `< 1000 ms: ${mark(met.wake_p99_under_1s)}`],
    ['backfill (1M rows)', fmt(f.backfill_rows_per_s, ' rows/s'), ''],
    ['live latency p99 during backfill', fmt(f.backfill_live_latency_p99_ms, ' ms'), ''],
    ['hol_penalty', f.hol_penalty === null ? 'not measured' : `${(f.hol_penalty * 100).toFixed(1)} %`, `≤ 10 %: ${mark(met.hol_penalty_at_most_10pct)}`],
    ['service peak RSS', fmt(f.service_peak_rss_mb, ' MB'), `≤ 300 MB: ${mark(met.service_at_most_300mb)}`],
    ['kafka peak RSS', fmt(f.kafka_peak_rss_mb, ' MB'), ''],
    ['connect peak RSS', fmt(f.connect_peak_rss_mb, ' MB'), ''],
    ['postgres peak (Pss)', fmt(f.postgres_peak_rss_mb, ' MB'), ''],
  ];
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length));
  return [`| ${'figure'.padEnd(w0)} | ${'value'.padEnd(w1)} | target |`, `|${'-'.repeat(w0 + 2)}|${'-'.repeat(w1 + 2)}|--------|`, ...rows.map(([a, b, c]) => `| ${a.padEnd(w0)} | ${b.padEnd(w1)} | ${c} |`)].join('\n');
}

export { round };
