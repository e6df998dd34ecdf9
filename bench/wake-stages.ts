// Where each wake of a sparse run went, stage by stage: the bench's commit and receipt of each
// project's first message (results.json, phases.sparse.detail.wakes), the service's "connector
// resumed" line (service.log; only when the run logged at info: BENCH_SERVICE_LOG_LEVEL=info), and
// Connect's log, whose lines name their connector and task (the task's start, Debezium's steps in
// it, and "Processing messages" once it streams). Percentiles of each stage, and the slowest wakes.
//
//   npx tsx bench/wake-stages.ts .bench/<run> [.stack/logs/connect.log]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { percentile } from './report.js';

const [dir, connectLog = path.join('.stack', 'logs', 'connect.log')] = process.argv.slice(2);
if (!dir) throw new Error('usage: tsx bench/wake-stages.ts <bench run dir> [connect.log]');
type Wake = { db: string; committed_at: number; received_at: number | null };
const wakes: Wake[] = JSON.parse(readFileSync(path.join(dir, 'results.json'), 'utf8')).phases.sparse.detail.wakes;

const push = (m: Map<string, number[]>, k: string, t: number) => m.set(k, [...(m.get(k) ?? []), t]);
const resumed = new Map<string, number[]>();
for (const line of readFileSync(path.join(dir, 'service.log'), 'utf8').split('\n')) {
  if (!line.includes('connector resumed')) continue;
  const j = JSON.parse(line) as { msg: string; project: string; time: number };
  if (j.msg === 'database written to: connector resumed') push(resumed, j.project, j.time);
}
// Debezium's own lines, in the order a task start writes them: the task's start; its connections,
// type registries and offsets read ("Obtained valid replication slot", first time); the schema read
// and the coordinator ("Starting streaming"); the replication connection (START_REPLICATION, which
// decodes the slot's WAL from its restart_lsn) until it streams ("Processing messages").
const MARKERS = ['Starting PostgresConnectorTask', 'Obtained valid replication slot', 'Starting streaming', 'Processing messages'] as const;
const marks = new Map<(typeof MARKERS)[number], Map<string, number[]>>(MARKERS.map((m) => [m, new Map()]));
const pattern = new RegExp(`^\\[(\\S+) (\\S+)\\] \\S+ \\[outbox\\.[^.]+\\.([^|]+)\\|task-0\\] (${MARKERS.join('|')})`);
for (const line of readFileSync(connectLog, 'utf8').split('\n')) {
  const m = pattern.exec(line);
  if (m) push(marks.get(m[4] as (typeof MARKERS)[number])!, m[3], Date.parse(`${m[1]}T${m[2].replace(',', '.')}Z`));
}
const [starts, slots, coordinated, streams] = MARKERS.map((m) => marks.get(m)!);
/** the first time in `ts` at or after t0 */
const after = (ts: number[] | undefined, t0: number | null) => (t0 === null ? null : (ts ?? []).filter((t) => t >= t0 - 5).sort((a, b) => a - b)[0] ?? null);

// a project's database is proj_<ref with - as _> (bench/environment.ts)
const rows = wakes
  .filter((w) => w.received_at !== null)
  .map((w) => {
    const ref = w.db.replace(/^proj_/, '').replaceAll('_', '-');
    const resume = after(resumed.get(ref), w.committed_at);
    const start = after(starts.get(ref), resume ?? w.committed_at);
    const slot = after(slots.get(ref), start);
    const coordinator = after(coordinated.get(ref), slot ?? start);
    return { commit: w.committed_at, resume, start, slot, coordinator, stream: after(streams.get(ref), coordinator ?? start), receipt: w.received_at! };
  });
const stages: [string, (r: (typeof rows)[number]) => number | null][] = [
  ['commit -> resume (service)', (r) => (r.resume === null ? null : r.resume - r.commit)],
  ['commit -> task start', (r) => (r.start === null ? null : r.start - r.commit)],
  ['task start -> streaming', (r) => (r.start === null || r.stream === null ? null : r.stream - r.start)],
  ['  start -> slot checked', (r) => (r.start === null || r.slot === null ? null : r.slot - r.start)],
  ['  slot -> streaming starts', (r) => (r.slot === null || r.coordinator === null ? null : r.coordinator - r.slot)],
  ['  -> processing messages', (r) => (r.coordinator === null || r.stream === null ? null : r.stream - r.coordinator)],
  ['streaming -> receipt', (r) => (r.stream === null ? null : r.receipt - r.stream)],
  ['commit -> receipt', (r) => r.receipt - r.commit],
];
console.log(`${rows.length} wakes received`);
for (const [name, f] of stages) {
  const xs = rows.map(f).filter((x): x is number => x !== null).sort((a, b) => a - b);
  if (xs.length === 0) console.log(`${name.padEnd(28)} (not in the logs)`);
  else console.log(`${name.padEnd(28)} n ${xs.length}  p50 ${Math.round(percentile(xs, 50)!)}  p90 ${Math.round(percentile(xs, 90)!)}  p99 ${Math.round(percentile(xs, 99)!)}  max ${Math.round(xs[xs.length - 1])}`);
}
// A woken connector resumes slow: when its first reads of the stream come before the walsender has
// the message, it sleeps one CAPTURE_SLOW_POLL (500 ms by default) before reading again.
const missed = rows.filter((r) => r.stream !== null && r.receipt - r.stream > 300).length;
console.log(`streaming -> receipt over 300 ms (a first read that missed, then a slow poll): ${missed} of ${rows.length}`);
for (const r of [...rows].sort((a, b) => b.receipt - b.commit - (a.receipt - a.commit)).slice(0, 5)) {
  console.log(`slowest: ${stages.map(([name, f]) => `${name.replace(' (service)', '')} ${f(r) ?? '-'}`).join(', ')}`);
}
