// The wake check's statement (idle-capture.ts, projectsToWake) on the real PostgreSQL: which idle
// projects it resumes for a write, and when it reads their slots. The statement compares each
// database's write counters with the W0 its stop recorded and returns only what moved: a database
// written to, one whose statistics were reset, one gone, a project with no W0. The slots (steps 6
// and 7) are read at most once a second per cluster. idle-capture.test.ts shows the whole wake
// through a running service; this file pins the cases a wake there never meets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectsToWake, type IdleProject } from '../../src/outbox/idle-capture.js';
import { slotName } from '../../src/outbox/connector.js';
import { ClusterPace, SLOT_READ_MS } from '../../src/outbox/quiet-cluster.js';
import { StatsReaders } from '../../src/outbox/quiet-database.js';
import { readSlotFigures } from '../../src/outbox/slot-figures.js';
import { swapSlotName } from '../../src/outbox/slot-swap.js';
import { createDatabase, dropDatabase, eventually, sql, uniqueName } from '../helpers/env.js';

const PREFIX = uniqueName('wk');
const WRITES = 'select (tup_inserted + tup_updated + tup_deleted)::text as n from pg_stat_database where datname = current_database()';

describe('the wake check against the real statistics', () => {
  const names = { a: uniqueName('wake_a_'), b: uniqueName('wake_b_'), c: uniqueName('wake_c_') };
  const urls: Record<string, string> = {};
  const readers = new StatsReaders();
  const errors: unknown[] = [];
  const ctx = {
    // CAPTURE_IDLE_MAX_WAL 0: any slot read is over it, so a 'wal' wake shows when slots were read
    cfg: { CAPTURE_IDLE_REFRESH: 3_600_000, TOPIC_PREFIX: PREFIX, CAPTURE_IDLE_MAX_WAL: 0, CAPTURE_IDLE_QUIET_WAL: 1024 * 1024 },
    projectDbs: { open: (_ref: string, sealed: Buffer) => sealed.toString() },
    log: { debug: (o: { err?: unknown }) => errors.push(o.err) },
  } as unknown as Parameters<typeof projectsToWake>[0];
  const project = (ref: string, url: string, w0: string | null, stoppedAgoMs = 1_000): IdleProject => ({
    ref,
    connector: `c-${ref}`,
    wake_writes: w0,
    stopped_ms: Date.now() - stoppedAgoMs,
    database_url_enc: Buffer.from(url),
  });
  /** The database's write counters once they stand still (a closed connection publishes them as it exits). */
  const settled = async (url: string) => {
    let last = '';
    return eventually(async () => {
      const n = (await sql(url, WRITES)).rows[0].n as string;
      const same = n === last;
      last = n;
      if (!same) await new Promise((r) => setTimeout(r, 300));
      return same && n;
    }, 30_000, 'the counters to stand still');
  };

  beforeAll(async () => {
    for (const [k, name] of Object.entries(names)) urls[k] = await createDatabase(name);
    for (const url of Object.values(urls)) await sql(url, 'create table t (x int); insert into t values (1), (2)');
    await sql(urls.a, `select pg_create_logical_replication_slot($1, 'pgoutput')`, [slotName('a', PREFIX)]);
  });

  afterAll(async () => {
    await readers.close();
    await sql(urls.a, 'select pg_drop_replication_slot($1)', [slotName('a', PREFIX)]).catch(() => {});
    for (const name of Object.values(names)) await dropDatabase(name);
  });

  it('resumes what was written to, gone, or never had a W0, leaves the rest, and reads the slots at most once a second', async () => {
    const w0a = await settled(urls.a);
    const w0b = await settled(urls.b);
    const w0c = await settled(urls.c);
    await sql(urls.b, 'insert into t values (3)');
    await eventually(async () => (await sql(urls.b, WRITES)).rows[0].n !== w0b, 30_000, "b's write to be published");
    const idle = [
      project('a', urls.a, w0a), // not written to; its slot holds WAL
      project('b', urls.b, w0b), // written to since W0
      project('c', urls.c, null), // no W0 recorded
      project('gone', urls.a.replace(names.a, uniqueName('wake_gone_')), w0c), // no such database
      project('old', urls.c, w0c, 7_200_000), // stopped longer than CAPTURE_IDLE_REFRESH
    ];
    const pace = new ClusterPace();
    const advancer = { readers, pace, floor: () => 0 };
    const sorted = (w: { ref: string; why: string }[]) => w.map((x) => `${x.ref}:${x.why}`).sort();

    const first = await projectsToWake(ctx, idle, advancer);
    expect(errors).toEqual([]);
    expect(sorted(first)).toEqual(['a:wal', 'b:write', 'c:write', 'gone:write', 'old:refresh']);
    // read just now: the next check, a moment later, does not read the slots again
    const t = Date.now();
    const second = await projectsToWake(ctx, idle, advancer);
    expect(Date.now() - t).toBeLessThan(SLOT_READ_MS); // the premise (not a timing target): still inside the second
    expect(sorted(second)).toEqual(['b:write', 'c:write', 'gone:write', 'old:refresh']);
    // and once the second has passed, it does
    await new Promise((r) => setTimeout(r, SLOT_READ_MS));
    const third = sorted(await projectsToWake(ctx, idle, advancer));
    // unless something wrote to a's database meanwhile (an autovacuum's analyze writes catalog rows;
    // CI saw it once, 2026-11-27): a write wakes it, which supersedes the slot's reading
    if ((await sql(urls.a, WRITES)).rows[0].n === w0a) expect(third).toContain('a:wal');
    else expect(third).toContain('a:write');

    // the statistics of a's database reset: its counters no longer read W0, and the project is
    // resumed rather than guessed about
    await sql(urls.a, 'select pg_stat_reset()');
    await eventually(async () => (await sql(urls.a, WRITES)).rows[0].n !== w0a, 30_000, "a's counters to be reset");
    const afterReset = await projectsToWake(ctx, [project('a', urls.a, w0a)], { readers, pace: new ClusterPace(), floor: () => 0 });
    expect(sorted(afterReset)).toEqual(['a:write']);
    expect(errors).toEqual([]);
  });

  it("reads a slot being replaced (dropped and copied back from its swap slot) as not read, not as missing", async () => {
    // the supervisor's read (slot-figures.ts) can land between the drop and the copy of the swap's
    // one statement (slot-swap.ts, step 4); the swap's temporary slot stands for the whole of it.
    // Made here by hand: c has no slot of its own, only one under the swap name.
    const figures = () =>
      readSlotFigures(
        { cfg: { TOPIC_PREFIX: PREFIX }, projectDbs: { open: (_ref: string, sealed: Buffer) => sealed.toString() } } as unknown as Parameters<typeof readSlotFigures>[0],
        readers,
        [{ ref: 'a', database_url_enc: Buffer.from(urls.a) }, { ref: 'b', database_url_enc: Buffer.from(urls.b) }, { ref: 'c', database_url_enc: Buffer.from(urls.c) }],
      );
    const swap = swapSlotName(slotName('c', PREFIX));
    await sql(urls.c, `select pg_create_logical_replication_slot($1, 'pgoutput')`, [swap]);
    try {
      const mid = await figures();
      expect(mid.get('a')).toMatchObject({ active: false, retained: expect.any(Number) });
      expect(mid.get('b')).toBeNull(); // no slot, no swap: missing
      expect(mid.has('c')).toBe(false); // mid-swap: the caller keeps what it knew
    } finally {
      await sql(urls.c, 'select pg_drop_replication_slot($1)', [swap]);
    }
    expect((await figures()).get('c')).toBeNull();
  });
});
