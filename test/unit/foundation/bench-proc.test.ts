// The benchmark's memory sampler of a process tree (bench/proc.ts), on this test's own process and
// a few children of it. What it must not do is hold the event loop while it reads: the sparse
// phase's clients take a message's commit time when its answer is read, and a synchronous sweep of
// ~450 backends' smaps_rollup held them 0.8 s every 5 s (docs/benchmark.md, twenty-second round).
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ProcWatch, treePssMb } from '../../../bench/proc.js';

const children: ChildProcess[] = [];

beforeAll(async () => {
  for (let i = 0; i < 4; i++) children.push(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }));
  await new Promise((r) => setTimeout(r, 200));
});

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

it("reads a tree's Pss between turns of the event loop, not in one", async () => {
  let turns = 0;
  let reading = true;
  const tick = () => {
    turns++;
    if (reading) setImmediate(tick);
  };
  setImmediate(tick);
  const before = turns;
  const mb = await treePssMb(process.pid);
  const during = turns - before;
  reading = false;
  expect(mb).toBeGreaterThan(0);
  // a sweep done in one piece would let no turn of the loop run before it resolves
  expect(during).toBeGreaterThan(0);
});

it('says null for a process that is gone', async () => {
  expect(await treePssMb(2 ** 30)).toBeNull();
});

it("has a tree's peak once stopped, its last read awaited", async () => {
  const watch = new ProcWatch();
  watch.add({ name: 'tree', pid: process.pid, tree: true });
  watch.start();
  await watch.stop();
  expect(watch.peakMb('tree')).toBeGreaterThan(0);
});
