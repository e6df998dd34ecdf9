// The load generator: a fixed number of pg clients, each committing single-row inserts (one
// autocommit INSERT = one transaction, one round trip), either as fast as they can or on a fixed
// schedule. Every row carries a sequence number that is unique over the whole run; the time its
// COMMIT returned is kept per sequence number, which is what latency is measured from.
import { performance } from 'node:perf_hooks';
import pg from 'pg';

export const TABLES = ['bench_plain', 'bench_hooked', 'bench_hang', 'bench_gw'] as const;
export type Table = (typeof TABLES)[number];

export const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The same row shape in every table: small, like a typical business event. */
export const tableDdl = (t: Table) => `
  create table if not exists public.${t} (
    id bigint generated always as identity primary key,
    seq bigint not null,
    account text not null,
    amount numeric(12,2) not null,
    note text not null,
    created_at timestamptz not null default now()
  )`;

export interface RunResult {
  first: number;
  count: number;
  startedAt: number;
  endedAt: number;
  /** rate-limited runs: how many inserts started more than 10 ms after their slot */
  late: number;
}

export class LoadGenerator {
  private clients: pg.Client[] = [];
  private seq = 0;
  readonly commitAt = new Map<number, number>();

  constructor(
    private readonly databaseUrl: string,
    readonly concurrency: number,
    private readonly noteBytes: number,
  ) {}

  async open() {
    for (let i = 0; i < this.concurrency; i++) {
      const c = new pg.Client({ connectionString: this.databaseUrl, application_name: 'bench-load' });
      await c.connect();
      this.clients.push(c);
    }
  }

  async close() {
    await Promise.all(this.clients.map((c) => c.end().catch(() => {})));
    this.clients = [];
  }

  /**
   * Inserts `count` rows, each into table(seq). Without `ratePerS`, every client inserts as fast as
   * it can; with it, row k starts at start + k / rate (a client that falls behind sends at once).
   */
  async run(count: number, table: (seq: number) => Table, ratePerS?: number): Promise<RunResult> {
    const first = this.seq;
    const end = first + count;
    this.seq = end;
    let next = first;
    let late = 0;
    const note = 'x'.repeat(this.noteBytes);
    const startedAt = now();
    const worker = async (c: pg.Client) => {
      for (;;) {
        const s = next++;
        if (s >= end) return;
        if (ratePerS) {
          const due = startedAt + ((s - first) * 1000) / ratePerS;
          const wait = due - now();
          if (wait > 1) await sleep(wait);
          else if (wait < -10) late++;
        }
        const t = table(s);
        await c.query({ name: `ins_${t}`, text: `insert into public.${t} (seq, account, amount, note) values ($1, $2, $3, $4)`, values: [s, `acct_${s % 997}`, (s % 10000) / 100, note] });
        this.commitAt.set(s, now());
      }
    };
    await Promise.all(this.clients.map(worker));
    return { first, count, startedAt, endedAt: now(), late };
  }
}
