// Resident memory and CPU time of the processes under test, read from /proc (Linux only).
//
// Single processes (the service, each JVM, the receiver, the baseline worker) are sampled by pid.
// Postgres is a tree of backends whose RSS each counts shared_buffers again, so its memory is the
// sum of Pss (proportional set size) over the postmaster and its children, and its CPU is the
// postmaster's own and reaped children's time plus that of the live children.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

const TICKS_PER_S = 100; // USER_HZ on every Linux architecture we run on
const kb = (text: string, key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);

function read(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** utime+stime (and, with children, cutime+cstime) in seconds, from /proc/<pid>/stat. */
function cpuSeconds(pid: number, withReaped = false): { cpu: number; ppid: number } | null {
  const stat = read(`/proc/${pid}/stat`);
  if (!stat) return null;
  // fields after the parenthesised command name, which may itself contain spaces
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]) + (withReaped ? Number(f[13]) + Number(f[14]) : 0);
  return { cpu: ticks / TICKS_PER_S, ppid: Number(f[1]) };
}

/** Seconds since `pid` started, from /proc/<pid>/stat (starttime) and /proc/uptime; null if gone. */
export function processAgeSeconds(pid: number): number | null {
  const stat = read(`/proc/${pid}/stat`);
  const uptime = read('/proc/uptime');
  if (!stat || !uptime) return null;
  const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  return Number(uptime.split(' ')[0]) - startTicks / TICKS_PER_S;
}

export interface ProcSample {
  rssMb: number;
  hwmMb: number;
  cpuS: number;
}

export function sampleProcess(pid: number): ProcSample | null {
  const status = read(`/proc/${pid}/status`);
  const cpu = cpuSeconds(pid);
  if (!status || !cpu) return null;
  return { rssMb: kb(status, 'VmRSS') / 1024, hwmMb: kb(status, 'VmHWM') / 1024, cpuS: cpu.cpu };
}

function childrenOf(parent: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const c = cpuSeconds(Number(name));
    if (c?.ppid === parent) out.push(Number(name));
  }
  return out;
}

/** Label → words that must all appear in a child's command line (Postgres shows role and database there). */
export type Groups = Record<string, string[]>;

/**
 * The Postgres cluster's CPU: the postmaster's own and its reaped children's, plus that of the live
 * children, per group too. Its memory is treePssMb's.
 */
export function sampleTreeCpu(root: number, groups: Groups = {}): { cpuS: number; groupCpuS: Record<string, number> } | null {
  const rootCpu = cpuSeconds(root, true);
  if (!rootCpu) return null;
  let cpuS = rootCpu.cpu;
  // per backend ("group#pid"): backends come and go, so only per-pid differences mean anything
  const groupCpuS: Record<string, number> = {};
  for (const pid of childrenOf(root)) {
    const c = cpuSeconds(pid)?.cpu ?? 0;
    cpuS += c;
    const cmd = read(`/proc/${pid}/cmdline`) ?? '';
    const g = Object.entries(groups).find(([, words]) => words.every((w) => cmd.includes(w)));
    if (g) groupCpuS[`${g[0]}#${pid}`] = c;
  }
  return { cpuS, groupCpuS };
}

/**
 * The tree's memory (MB): Pss summed over the postmaster and its children (each backend's RSS counts
 * shared_buffers again). Read without blocking the event loop: smaps_rollup walks each backend's
 * page tables, and with the sparse phase's ~450 backends a synchronous sweep took 0.8 s on a slow
 * machine, every 5 s; the benchmark's clients, whose commit times are taken when their answer is
 * read, were held with it (some wakes measured negative: received before their commit was seen).
 * Each read runs on libuv's thread pool, the loop free between them. Null: the root is gone.
 */
export async function treePssMb(root: number): Promise<number | null> {
  if (!existsSync(`/proc/${root}`)) return null;
  let pssKb = 0;
  for (const pid of [root, ...childrenOf(root)]) {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => null);
    if (rollup) pssKb += kb(rollup, 'Pss');
  }
  return pssKb / 1024;
}

/** Busy and total CPU seconds of the whole machine since boot (all cores), from /proc/stat. */
export function machineCpu(): { busyS: number; totalS: number } {
  const line = (read('/proc/stat') ?? 'cpu 0 0 0 0').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = line.reduce((a, b) => a + b, 0);
  const idle = line[3] + (line[4] ?? 0);
  return { busyS: (total - idle) / TICKS_PER_S, totalS: total / TICKS_PER_S };
}

export function pidFromFile(file: string): number | null {
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && existsSync(`/proc/${pid}`) ? pid : null;
}

export interface Watched {
  name: string;
  pid: number;
  tree?: boolean;
  /** for a tree: CPU of live children reported per group (e.g. the project database's backends) */
  groups?: Groups;
}

/**
 * Samples every watched process on an interval, keeping each one's peak resident memory, and
 * takes CPU snapshots at phase boundaries so each phase can say where its CPU went.
 */
export class ProcWatch {
  private readonly peaks = new Map<string, number>();
  /** peaks since the last resetPhase(), to tie memory to what the phase did (e.g. a backlog) */
  private readonly phasePeaks = new Map<string, number>();
  private readonly hwm = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private readonly watched: Watched[] = [];
  /** the tree reads under way, by name */
  private readonly treeReads = new Map<string, Promise<void>>();

  add(w: Watched) {
    this.watched.push(w);
  }

  /** The process called `name` is now `pid` (a restarted service): sampled from here on. */
  repoint(name: string, pid: number) {
    const w = this.watched.find((x) => x.name === name);
    if (w) w.pid = pid;
    else this.add({ name, pid });
  }

  /**
   * Trees are sampled every `treeEvery` ticks only: smaps_rollup walks each backend's page tables
   * (shared_buffers included), which costs the benchmark process real CPU with hundreds of backends.
   */
  start(intervalMs = 500, treeEvery = 10) {
    let tick = 0;
    this.sample(true);
    this.timer = setInterval(() => this.sample(++tick % treeEvery === 0), intervalMs);
    this.timer.unref();
  }

  /** Stops sampling, after a last sample of every process (trees included, read to the end). */
  async stop() {
    if (this.timer) clearInterval(this.timer);
    await Promise.all(this.treeReads.values());
    this.sample(true);
    await Promise.all(this.treeReads.values());
  }

  /** Single processes are read at once; a tree in the background (treePssMb), one read at a time each. */
  private sample(trees: boolean) {
    for (const w of this.watched) {
      if (!w.tree) {
        const s = sampleProcess(w.pid);
        if (s) this.record(w.name, s.rssMb, s.hwmMb);
      } else if (trees && !this.treeReads.has(w.name)) {
        const read = treePssMb(w.pid)
          .then((mb) => void (mb !== null && this.record(w.name, mb, mb)))
          .finally(() => this.treeReads.delete(w.name));
        this.treeReads.set(w.name, read);
      }
    }
  }

  private record(name: string, rssMb: number, hwmMb: number) {
    this.peaks.set(name, Math.max(this.peaks.get(name) ?? 0, rssMb));
    this.phasePeaks.set(name, Math.max(this.phasePeaks.get(name) ?? 0, rssMb));
    this.hwm.set(name, Math.max(this.hwm.get(name) ?? 0, hwmMb));
  }

  /** Peak RSS seen while sampling (MB); for a process started by the run, its VmHWM is included. */
  peakMb(name: string, useHwm = false): number | null {
    const p = this.peaks.get(name);
    if (p === undefined) return null;
    return Math.round(Math.max(p, useHwm ? (this.hwm.get(name) ?? 0) : 0));
  }

  resetPhase() {
    this.phasePeaks.clear();
  }

  /** Peak RSS (MB) of the single processes since resetPhase(). */
  phasePeakMb(): Record<string, number> {
    const names = new Set(this.watched.filter((w) => !w.tree).map((w) => w.name));
    return Object.fromEntries([...this.phasePeaks].filter(([k]) => names.has(k)).map(([k, v]) => [k, Math.round(v)]));
  }

  /** Lifetime VmHWM (MB): for long-running shared processes it predates the run. */
  lifetimeHwmMb(name: string): number | null {
    const h = this.hwm.get(name);
    return h === undefined ? null : Math.round(h);
  }

  cpuSnapshot(): Record<string, number> {
    const m = machineCpu();
    const own = process.cpuUsage();
    const out: Record<string, number> = { machine_busy: m.busyS, machine_total: m.totalS, bench: (own.user + own.system) / 1e6 };
    for (const w of this.watched) {
      if (w.tree) {
        const s = sampleTreeCpu(w.pid, w.groups);
        if (!s) continue;
        out[w.name] = s.cpuS;
        for (const [g, c] of Object.entries(s.groupCpuS)) out[`${w.name}.${g}`] = c;
      } else {
        const s = sampleProcess(w.pid);
        if (s) out[w.name] = s.cpuS;
      }
    }
    return out;
  }
}

/** CPU seconds used by each process between two snapshots, and the machine's busy share. */
export function cpuBetween(a: Record<string, number>, b: Record<string, number>, wallS: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(b)) {
    const hash = k.indexOf('#');
    if (hash > 0) {
      // a backend: what it used since the first snapshot, or since it started (CPU of backends that
      // ended during the phase is not seen, so groups are lower bounds)
      const g = k.slice(0, hash);
      out[g] = (out[g] ?? 0) + b[k] - (a[k] ?? 0);
      continue;
    }
    if (k === 'machine_total' || !(k in a)) continue;
    out[k] = b[k] - a[k];
  }
  for (const k of Object.keys(out)) out[k] = Math.round(out[k] * 100) / 100;
  // share of all cores that were busy during the phase (1.0 = every core busy the whole time)
  // CPU of everything else on the machine (other users' processes); postgres, kafka and connect
  // above are shared too, so they include other users' work on them
  const ours = Object.entries(out).filter(([k]) => k !== 'machine_busy' && !k.includes('.')).reduce((sum, [, v]) => sum + v, 0);
  out.others = Math.round((out.machine_busy - ours) * 100) / 100;
  out.machine_busy_share = Math.round(((b.machine_busy - a.machine_busy) / Math.max(1e-9, b.machine_total - a.machine_total)) * 100) / 100;
  out.wall_s = Math.round(wallS * 100) / 100;
  return out;
}
