// Summarises a V8 .cpuprofile (node --cpu-prof) by where self time was spent: our own source
// files by file, dependencies by package, and V8/Node internals by category. This is the evidence
// for what to tune in the service; it is written next to the results when BENCH_PROFILE=1.
// summariseHeapProfile does the same for a sampling heap profile (BENCH_HEAP_PROFILE=1,
// bench/heap-sample.cjs): bytes allocated, by where, the freed ones included.
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

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/**
 * Bytes allocated by place (file or package, as summariseProfile buckets them) and by function,
 * the largest first, with each one's share of all that was allocated.
 */
export function summariseHeapProfile(file: string, top = 25): { total_mb: number; by_place: { name: string; mb: number; share: number }[]; by_function: { name: string; mb: number; share: number }[] } {
  const head = (JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode }).head;
  const places = new Map<string, number>();
  const functions = new Map<string, number>();
  let all = 0;
  const stack = [head];
  while (stack.length > 0) {
    const n = stack.pop()!;
    stack.push(...n.children);
    if (n.selfSize === 0) continue;
    const place = bucket(n.callFrame.url, n.callFrame.functionName);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${place}:${n.callFrame.lineNumber + 1}`;
    places.set(place, (places.get(place) ?? 0) + n.selfSize);
    functions.set(fn, (functions.get(fn) ?? 0) + n.selfSize);
    all += n.selfSize;
  }
  const rows = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, bytes]) => ({ name, mb: Math.round(bytes / 1e5) / 10, share: Math.round((bytes / all) * 1000) / 10 }));
  return { total_mb: Math.round(all / 1e6), by_place: rows(places), by_function: rows(functions) };
}

/** The main thread's profile: the largest one (worker threads, if any, write their own). */
export function findProfile(dir: string, ext = '.cpuprofile'): string | null {
  const files = readdirSync(dir)
    .filter((x) => x.endsWith(ext))
    .map((x) => path.join(dir, x))
    .sort((a, b) => statSync(b).size - statSync(a).size);
  return files[0] ?? null;
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  const file = process.argv[2];
  if (file.endsWith('.heapprofile')) {
    const h = summariseHeapProfile(file);
    console.log(`${h.total_mb} MB allocated`);
    for (const [title, rows] of [['by place', h.by_place], ['by function', h.by_function]] as const) {
      console.log(`\n${title}`);
      for (const row of rows) console.log(`${String(row.share).padStart(5)} %  ${String(row.mb).padStart(8)} MB  ${row.name}`);
    }
  } else for (const row of summariseProfile(file)) console.log(`${String(row.share).padStart(5)} %  ${String(row.ms).padStart(7)} ms  ${row.name}`);
}
