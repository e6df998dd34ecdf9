// The rule of a project's share (delivery/endpoints/project-share.ts), on its own; the integration
// test dispatch-project-share shows it between two projects on the real dispatcher.
import { describe, expect, it } from 'vitest';
import { ProjectShares } from '../../../src/delivery/endpoints/project-share.js';
import { WindowFullError, type Ticket } from '../../../src/delivery/endpoints/window.js';

const settle = () => new Promise((r) => setImmediate(r));

describe('ProjectShares', () => {
  it('lets a lone project use all but the reserved share, and a project under its share start at once', async () => {
    const s = new ProjectShares(8, 2, 100);
    const a: Ticket[] = [];
    for (let i = 0; i < 6; i++) a.push(await s.acquire('a'));
    expect(s.inflight('a')).toBe(6);
    // the 7th of a waits: 6 in flight leaves only the 2 reserved slots
    let seventh: Ticket | undefined;
    void s.acquire('a').then((t) => (seventh = t));
    await settle();
    expect(seventh).toBeUndefined();
    // b is under its share: it starts, twice, even with a waiting before it
    const b1 = await s.acquire('b');
    const b2 = await s.acquire('b');
    expect(s.inflight('b')).toBe(2);
    // a third of b is over its share with only 0 free above the reserve: it waits behind a's
    let third: Ticket | undefined;
    void s.acquire('b').then((t) => (third = t));
    await settle();
    expect(third).toBeUndefined();
    // one of a's ends: 7 in flight, still not under size - share: nobody over the share starts
    a.pop()!.done(null);
    await settle();
    expect(seventh).toBeUndefined();
    b1.done(null);
    await settle();
    // b under its share again: its waiter starts, a's does not (6 in flight with b's, over the line)
    expect(third).toBeDefined();
    expect(seventh).toBeUndefined();
    b2.done(null);
    third!.done(null);
    await settle();
    expect(seventh).toBeDefined();
  });

  it('keeps a project’s own waiters in order and holds them past its queue', async () => {
    const s = new ProjectShares(2, 1, 2);
    const first = await s.acquire('a');
    const order: number[] = [];
    const w1 = s.acquire('a').then((t) => (order.push(1), t));
    const w2 = s.acquire('a').then((t) => (order.push(2), t));
    await expect(s.acquire('a')).rejects.toBeInstanceOf(WindowFullError);
    first.done(null);
    (await w1).done(null);
    (await w2).done(null);
    expect(order).toEqual([1, 2]);
    expect(s.inflight('a')).toBe(0);
  });
});
