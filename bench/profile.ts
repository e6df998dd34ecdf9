// Summarises a V8 .cpuprofile (node --cpu-prof) by where self time was spent: our own source
// files by file, dependencies by package, and V8/Node internals by category. This is the evidence
// for what to tune in the service; it is written next to the results when BENCH_PROFILE=1.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function bucket(url: string, fn: string): string {
  if (!url) return fn === '(garbage collector)' || fn === '(idle)' || fn === '(program)' ? fn : `(native) ${fn || 'anonymous'}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `npm:${pkg[1]}`;
  if (url.startsWith('node:')) return url;
  const src = /\/(src\/.*)$/.exec(url);
  return src ? src[1] : url;
}

export function summariseProfile(file: string, top = 25): { name: string; ms: number; share: number }[] {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const totals = new Map<string, number>();
  let all = 0;
  p.samples.forEach((id, i) => {
    const n = byId.get(id);
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    if (!n || n.callFrame.functionName === '(idle)') return;
    const k = bucket(n.callFrame.url, n.callFrame.functionName);
    totals.set(k, (totals.get(k) ?? 0) + dt);
    all += dt;
  });
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, ms]) => ({ name, ms: Math.round(ms), share: Math.round((ms / all) * 1000) / 10 }));
}

/** The main thread's profile: the largest one (worker threads, if any, write their own). */
export function findProfile(dir: string): string | null {
  const files = readdirSync(dir)
    .filter((x) => x.endsWith('.cpuprofile'))
    .map((x) => path.join(dir, x))
    .sort((a, b) => statSync(b).size - statSync(a).size);
  return files[0] ?? null;
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  for (const row of summariseProfile(process.argv[2])) console.log(`${String(row.share).padStart(5)} %  ${String(row.ms).padStart(7)} ms  ${row.name}`);
}
