// Two speeds of a running connector (src/outbox/capture-speed.ts), against the real stack: a
// project with few messages has its connector read its replication stream every CAPTURE_SLOW_POLL,
// a burst brings it back to every 10 ms, and nothing is lost or sent twice across the switches
// (each one restarts the task, which resumes from the slot).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshProjectOutbox } from '../../src/outbox/index.js';
import { eventually, stack } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';

describe('capture speed', () => {
  let f: IdleCaptureFixture;
  const poll = async () => ((await (await fetch(`${stack().connectUrl}/connectors/${f.connector}/config`)).json()) as Record<string, string>)['poll.interval.ms'];
  const speed = async () => (await f.svc.ctx.db.query('select capture_speed from connector_supervision where project_ref = $1', [f.project.ref])).rows[0]?.capture_speed;

  beforeAll(async () => {
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '0', CAPTURE_SPEED_WINDOW: '4s', CAPTURE_SLOW_POLL: '1s', CAPTURE_SLOW_AT: '1', CAPTURE_FAST_AT: '6' });
  });
  afterAll(async () => f?.stop());

  it('a quiet connector goes slow, a burst makes it fast again, and every row arrives once', async () => {
    expect(await poll()).toBe('10');
    await eventually(async () => (await speed()) === 'slow', 60_000, 'the quiet connector to go slow');
    await eventually(async () => (await poll()) === '1000', 30_000, 'its config to read every second');
    // the new config restarts the connector, which reads UNASSIGNED for a moment (longer when
    // Connect is busy rebalancing other projects' connectors): slow means running, not stopped
    await eventually(async () => (await f.connectState()) === 'RUNNING', 30_000, 'the slow connector to be running');

    // slow still captures: a single row arrives
    await f.insert('while slow');
    await eventually(async () => f.notes().includes('while slow'), 30_000, 'the row written while slow');

    // a burst: the connector goes fast (its task restarts) while the rows are captured
    for (let i = 0; i < 12; i++) await f.insert(`burst ${i}`);
    await eventually(async () => (await speed()) === 'fast', 30_000, 'the busy connector to go fast');
    await eventually(async () => (await poll()) === '10', 30_000, 'its config to read every 10 ms');
    for (let i = 12; i < 20; i++) await f.insert(`burst ${i}`);
    await eventually(async () => f.notes().filter((n) => n.startsWith('burst')).length >= 20, 60_000, 'the burst');
    const burst = f.notes().filter((n) => n.startsWith('burst'));
    expect(new Set(burst).size).toBe(20);

    // the refresh at start leaves the speed alone
    expect(await refreshProjectOutbox(f.svc.ctx, f.project.ref)).toMatchObject({ connector: 'current' });
    expect(await poll()).toBe('10');

    // quiet again: slow again
    await eventually(async () => (await speed()) === 'slow', 60_000, 'slow again after the burst');
    await eventually(async () => (await poll()) === '1000', 30_000, 'its config to read every second again');
    expect(await refreshProjectOutbox(f.svc.ctx, f.project.ref)).toMatchObject({ connector: 'current' });
    expect(await poll()).toBe('1000');
    await f.insert('slow again');
    await eventually(async () => f.notes().includes('slow again'), 30_000, 'the row written after going slow again');
  });
});
