import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Limiter, PartitionTracker } from '../../../src/delivery/consume/offsets.js';

describe('PartitionTracker', () => {
  it('commits only up to the oldest unfinished offset', () => {
    const t = new PartitionTracker();
    expect(t.committable()).toBeNull();
    for (const o of [10, 11, 12, 13]) t.begin(o);
    t.finish(11);
    t.finish(13);
    expect(t.committable()).toBe(10);
    t.finish(10);
    expect(t.committable()).toBe(12);
    t.markCommitted(12);
    expect(t.committable()).toBeNull();
    t.finish(12);
    expect(t.committable()).toBe(14);
  });

  it('never passes an unfinished offset, whatever the finishing order', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 50 }), fc.infiniteStream(fc.nat()), (done, picks) => {
        const t = new PartitionTracker();
        done.forEach((_, i) => t.begin(i));
        const pending = done.flatMap((d, i) => (d ? [i] : []));
        const it2 = picks[Symbol.iterator]();
        while (pending.length) t.finish(pending.splice(it2.next().value % pending.length, 1)[0]);
        const firstOpen = done.indexOf(false);
        expect(t.committable()).toBe(firstOpen === -1 ? done.length : firstOpen);
      }),
    );
  });
});

describe('Limiter', () => {
  it('bounds the slots and wakes waiters on release', async () => {
    const l = new Limiter(2);
    expect(await l.acquire(async () => {}, () => false)).toBe(true);
    expect(await l.acquire(async () => {}, () => false)).toBe(true);
    let third = false;
    const p = l.acquire(async () => {}, () => false).then((ok) => (third = ok));
    await new Promise((r) => setTimeout(r, 20));
    expect(third).toBe(false);
    l.release();
    await p;
    expect(third).toBe(true);
    expect(l.active).toBe(2);
    l.release();
    l.release();
    await l.idle();
  });
  it('with weights bounds their sum, and always lets one heavy holder in', async () => {
    const l = new Limiter(10);
    expect(await l.acquire(async () => {}, () => false, 25)).toBe(true); // alone: over the bound, still in
    let small = false;
    const p = l.acquire(async () => {}, () => false, 1).then((ok) => (small = ok));
    await new Promise((r) => setTimeout(r, 20));
    expect(small).toBe(false);
    l.release(25);
    await p;
    expect(await l.acquire(async () => {}, () => false, 6)).toBe(true);
    let six = false;
    const q = l.acquire(async () => {}, () => false, 6).then((ok) => (six = ok));
    await new Promise((r) => setTimeout(r, 20));
    expect(six).toBe(false);
    expect(l.active).toBe(7);
    l.release(6);
    await q;
    expect(l.active).toBe(7);
    l.release(1);
    l.release(6);
    await l.idle();
  });
  it('gives up waiting when cancelled', async () => {
    const l = new Limiter(1);
    await l.acquire(async () => {}, () => false);
    let cancel = false;
    const p = l.acquire(async () => {}, () => cancel);
    cancel = true;
    expect(await p).toBe(false);
  });
});
