// The periodic refresh of an idle project's connector (CAPTURE_IDLE_REFRESH), against the real
// stack: with no write at all, a stopped connector is resumed, runs for CAPTURE_REFRESH_RUN (not a
// whole CAPTURE_IDLE_AFTER) and is stopped again; a row committed afterwards still arrives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';

describe('idle capture: the periodic refresh', () => {
  let f: IdleCaptureFixture;

  beforeAll(async () => {
    // a refresh 3 s after each stop, running 1 s; CAPTURE_IDLE_AFTER long enough to tell them apart
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '30s', CAPTURE_IDLE_REFRESH: '3s', CAPTURE_REFRESH_RUN: '1s' });
  });

  afterAll(async () => {
    await f?.stop();
  });

  it('resumes a stopped connector with no write, stops it again after CAPTURE_REFRESH_RUN, and loses nothing', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 90_000, 'the idle project to be stopped');
    const first = (await f.supervised()).stopped_at as Date;
    // the refresh resumes it, then it is stopped again: a later stop, well before CAPTURE_IDLE_AFTER
    // (a second stop needs a resume in between: with no write, only the refresh resumes it)
    await eventually(
      async () => {
        const s = await f.supervised();
        return s.state === 'idle' && (s.stopped_at as Date).getTime() > first.getTime();
      },
      25_000,
      'stopped again after its refresh',
    );
    const second = (await f.supervised()).stopped_at as Date;
    const gap = second.getTime() - first.getTime();
    console.log(`[idle-refresh] stopped -> refreshed -> stopped again in ${gap} ms (CAPTURE_IDLE_AFTER 30 s)`);
    expect(gap).toBeLessThan(20_000);
    expect(await f.connectState()).toBe('STOPPED');

    // nothing is stuck: a row committed now wakes it and arrives
    await f.insert('after a refresh');
    await eventually(async () => f.notes().includes('after a refresh'), 60_000, 'the row committed after the refresh');
  });
});
