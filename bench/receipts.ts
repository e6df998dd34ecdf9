// The benchmark's side of the receiver process: forks it, collects its receipt reports and waits
// for a set of sequence numbers to arrive.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Arrival {
  /** sequence numbers in the range that arrived */
  delivered: number;
  expected: number;
  /** time of the last receipt in the range (performance.timeOrigin + now(), ms) */
  lastAt: number;
  complete: boolean;
}

export class Receipts {
  readonly at = new Map<number, number>();
  duplicates = 0;
  hung = 0;
  unparsable = 0;
  port = 0;
  /** the never-answering target's own port (another origin) */
  hangPort = 0;
  pid = 0;
  private child: ChildProcess | null = null;

  async start(): Promise<void> {
    const child = fork(fileURLToPath(new URL('./receiver.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child = child;
    this.pid = child.pid!;
    child.on('message', (m: { port?: number; hangPort?: number; receipts?: number[]; hung?: number; unparsable?: number }) => {
      if (m.port) this.port = m.port;
      if (m.hangPort) this.hangPort = m.hangPort;
      if (m.receipts) {
        for (let i = 0; i < m.receipts.length; i += 2) {
          const seq = m.receipts[i];
          if (this.at.has(seq)) this.duplicates++;
          else this.at.set(seq, m.receipts[i + 1]);
        }
      }
      this.hung += m.hung ?? 0;
      this.unparsable += m.unparsable ?? 0;
    });
    const deadline = Date.now() + 30_000;
    while (!this.port) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error('the receiver process did not start');
      await sleep(50);
    }
  }

  url(path: string, port = this.port): string {
    return `http://127.0.0.1:${port}${path}`;
  }

  /**
   * Waits until every sequence number in [first, first+count) that `wanted` accepts has arrived,
   * or until none has arrived for `stallMs` (then the set is reported incomplete).
   */
  async waitFor(first: number, count: number, stallMs: number, wanted: (seq: number) => boolean = () => true, onProgress?: (a: Arrival) => void): Promise<Arrival> {
    let lastCount = -1;
    let lastProgress = Date.now();
    let lastReport = 0;
    for (;;) {
      const a = this.arrival(first, count, wanted);
      if (a.delivered !== lastCount) {
        lastCount = a.delivered;
        lastProgress = Date.now();
      }
      if (onProgress && Date.now() - lastReport > 5000) {
        lastReport = Date.now();
        onProgress(a);
      }
      if (a.complete || Date.now() - lastProgress > stallMs) return a;
      await sleep(100);
    }
  }

  arrival(first: number, count: number, wanted: (seq: number) => boolean = () => true): Arrival {
    let delivered = 0;
    let expected = 0;
    let lastAt = 0;
    for (let s = first; s < first + count; s++) {
      if (!wanted(s)) continue;
      expected++;
      const t = this.at.get(s);
      if (t === undefined) continue;
      delivered++;
      if (t > lastAt) lastAt = t;
    }
    return { delivered, expected, lastAt, complete: delivered === expected };
  }

  stop() {
    if (this.child?.connected) this.child.disconnect();
  }
}
