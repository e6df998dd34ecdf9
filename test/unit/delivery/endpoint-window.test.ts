// Slow start (src/delivery/endpoints/window.ts): the window grows on answers, halves once per round
// trip on faults, pauses after a run of faults, and waiting attempts give their dispatcher slot back.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EndpointWindows, WindowFullError, type Ticket } from '../../../src/delivery/endpoints/window.js';
import { Limiter, LimiterSlot } from '../../../src/delivery/consume/offsets.js';
import type { AttemptOutcome } from '../../../src/outbound/index.js';

const e = { project: 'p', key: 'webhook:1', webhookId: '1' };
const ok: Pick<AttemptOutcome, 'outcome' | 'reason' | 'httpStatus'> = { outcome: 'delivered', reason: 'accepted', httpStatus: 200 };
const down = { outcome: 'failed' as const, reason: 'http_status' as const, httpStatus: 503 };
const opts = { max: 1000, initial: 4, queue: 1000, pauseAfter: 10, pauseMs: 60_000, pauseMaxMs: 60_000 };

/** Starts n acquisitions; returns the tickets granted so far (the rest resolve later). */
function burst(w: EndpointWindows, n: number, cap: number | null = null) {
  const granted: Ticket[] = [];
  const all = Array.from({ length: n }, () => w.acquire(e, cap).then((t) => (granted.push(t), t)));
  return { granted, all };
}
const tick = () => new Promise((r) => setImmediate(r));

describe('endpoint windows (slow start)', () => {
  it('starts small and doubles every round trip while the endpoint answers', async () => {
    const w = new EndpointWindows(opts);
    const { granted } = burst(w, 200);
    await tick();
    expect(granted.length).toBe(4);
    const rounds: number[] = [];
    let done = 0;
    while (done < 200) {
      const round = granted.slice(done);
      rounds.push(round.length);
      for (const t of round) t.done(ok);
      done += round.length;
      await tick();
    }
    expect(rounds.slice(0, 5)).toEqual([4, 8, 16, 32, 64]);
  });

  it('a burst to a dead endpoint costs about pauseAfter attempts, then nothing until the pause ends', async () => {
    const w = new EndpointWindows(opts);
    const { granted } = burst(w, 300);
    let sent = 0;
    for (let i = 0; i < 50; i++) {
      await tick();
      const round = granted.slice(sent);
      if (round.length === 0) break;
      sent += round.length;
      for (const t of round) t.done(down);
    }
    expect(sent).toBeLessThanOrEqual(12);
    expect(w.limit(e)).toBe(0);
  });

  it('halves once per round trip, so a few faults among many answers do not collapse it', async () => {
    const w = new EndpointWindows({ ...opts, initial: 64 });
    const { granted } = burst(w, 64);
    await tick();
    expect(granted.length).toBe(64);
    granted.slice(0, 5).forEach((t) => t.done(down));
    expect(w.limit(e)).toBe(32);
  });

  it('caps at max_in_flight and lets answers that say nothing of the endpoint leave it alone', async () => {
    const w = new EndpointWindows(opts);
    const { granted } = burst(w, 100, 3);
    await tick();
    expect(granted.length).toBe(3);
    for (let i = 0; i < 10; i++) {
      granted.slice(-3).forEach((t) => t.done(ok));
      await tick();
    }
    expect(w.limit(e)).toBe(3);
    const before = w.limit(e);
    granted.at(-1)!.done({ outcome: 'failed', reason: 'internal' as never, httpStatus: undefined });
    expect(w.limit(e)).toBe(before);
  });

  it('holds (WindowFullError) beyond the queue bound', async () => {
    const w = new EndpointWindows({ ...opts, queue: 2 });
    const { all } = burst(w, 8); // 4 in the window, 2 wait, 2 too many
    const settled = await Promise.race([Promise.allSettled(all.slice(6)), new Promise((r) => setTimeout(r, 50, 'pending'))]);
    expect(settled).not.toBe('pending');
    expect((settled as PromiseSettledResult<Ticket>[]).every((s) => s.status === 'rejected' && s.reason instanceof WindowFullError)).toBe(true);
  });

  it('a waiting attempt gives its dispatcher slot back and takes one again before it sends', async () => {
    const limiter = new Limiter(2);
    const w = new EndpointWindows({ ...opts, initial: 1 });
    const slots = [0, 1].map(() => new LimiterSlot(limiter, async () => {}, () => false));
    for (const _ of slots) await limiter.acquire(async () => {}, () => false);
    const first = await w.acquire(e, null, slots[0]);
    const second = w.acquire(e, null, slots[1]);
    await tick();
    expect(limiter.active).toBe(1); // the second waits for the window without a slot
    first.done(ok);
    await second;
    expect(limiter.active).toBe(2);
  });

  it('an attempt that waited for the window is not sent once its dispatcher is stopping, even with slots free', async () => {
    const limiter = new Limiter(4);
    let stopping = false;
    const w = new EndpointWindows({ ...opts, initial: 1 });
    const slots = [0, 1].map(() => new LimiterSlot(limiter, async () => {}, () => stopping));
    for (const _ of slots) await limiter.acquire(async () => {}, () => false);
    const first = await w.acquire(e, null, slots[0]);
    const second = w.acquire(e, null, slots[1]);
    await tick();
    // the drain of a stop sees this slot free (the waiter gave it back) and goes on
    stopping = true;
    first.done(ok);
    await expect(second).rejects.toThrow(/stopping/);
    expect(limiter.active).toBe(1); // only the first's slot; the waiter took none
  });

  describe("when the pause timer fires a little early by the window's clock", () => {
    afterEach(() => vi.useRealTimers());

    // Node's timers count from the loop's clock, read when its turn began; the window's clock is
    // read later. A timer armed late in a busy turn fires before the pause ends by that clock. Here
    // the window's clock runs 5 ms ahead from just after the pause began, which is the same thing
    // seen from the window.
    it('wakes again when the pause ends, so a waiter left alone by the early timer is still let in', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      let skew = 0;
      const w = new EndpointWindows({ ...opts, initial: 1, pauseAfter: 1, pauseMs: 1000, now: () => performance.now() + skew });
      const first = await w.acquire(e, null);
      let granted: Ticket | undefined;
      void w.acquire(e, null).then((t) => (granted = t));
      await Promise.resolve();
      first.done(down); // the pause begins: the waiter waits for its end, nothing else is in flight
      expect(w.limit(e)).toBe(0);
      skew = -5;
      await vi.advanceTimersByTimeAsync(1001); // the pause's timer: 4 ms short of its end by the window's clock
      expect(granted).toBeUndefined();
      await vi.advanceTimersByTimeAsync(10);
      expect(granted).toBeDefined();
    });

    it('is monotonic by default: a step of the wall clock neither ends nor lengthens a pause', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
      const w = new EndpointWindows({ ...opts, initial: 1, pauseAfter: 1, pauseMs: 1000 });
      const first = await w.acquire(e, null);
      let granted: Ticket | undefined;
      void w.acquire(e, null).then((t) => (granted = t));
      await Promise.resolve();
      first.done(down);
      vi.setSystemTime(Date.now() + 3_600_000); // the wall clock jumps an hour ahead
      expect(w.limit(e)).toBe(0);
      vi.setSystemTime(Date.now() - 7_200_000); // and then an hour behind where it was
      await vi.advanceTimersByTimeAsync(1010);
      expect(granted).toBeDefined();
    });
  });
});
