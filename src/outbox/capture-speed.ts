// Two speeds of a running connector. Debezium's Postgres streaming loop reads the replication
// stream, and when nothing is pending sleeps poll.interval.ms before reading again (its
// ChangeEventQueue hands a record over at once with max.batch.size=1; the sleep that matters is the
// streaming source's). At the template's 10 ms a running connector with nothing to capture wakes a
// hundred times a second: measured here ~35 ms/s of Connect CPU per connector (six idle connectors:
// 283 ms/s against a 75 ms/s baseline), against ~2 ms/s at 1 s (87 ms/s); commit-to-receipt of
// single rows went from p50 16 / max 89 ms to p50 571 / max 1,022 ms.
//
// A project that sends a message now and then (the typical project of a platform: neither silent,
// so never stopped by idle capture, nor busy) therefore runs 'slow' (CAPTURE_SLOW_POLL), and one
// whose traffic picks up runs 'fast' again:
//   fast -> slow: at most CAPTURE_SLOW_AT messages in the last CAPTURE_SPEED_WINDOW, and the
//                 connector has run at its speed that long (a connector just resumed or enabled
//                 keeps the template's speed for a window first);
//   slow -> fast: CAPTURE_FAST_AT messages or more in the window.
// Changing the speed PUTs the connector's config with the other poll.interval.ms, which restarts its
// task: capture pauses for the restart (about a second) and resumes from the slot, so nothing is
// lost or sent twice beyond the usual at-least-once. At most a few switches per supervisor check
// (a hundred restarts at once on two cores held capture up for tens of seconds in the bench). A
// connector about to be stopped as idle is made slow first, so it resumes slow: a project that
// wakes now and then never restarts for its speed. The price: the message that wakes it waits one
// slow poll (run D, docs/benchmark.md "Sixth round": 531 ms of an 887 ms wake). The streaming source
// sleeps poll.interval.ms after five empty reads, and its first reads are empty while PostgreSQL
// decodes from the slot's restart_lsn. Resuming fast instead (made fast while stopped, which
// restarts nothing, and slow again a few seconds after the wake) was measured and rejected (run C,
// docs/benchmark.md "Seventh round"): the wake's median halved, but each wake cost 0.8 s of CPU
// (a task restart and the fast seconds), and a hundred wakes a minute on two cores lost the tail.
// The refresh at start (enable.ts) leaves poll.interval.ms as the supervisor set it.
import { MESSAGE_PREFIX_KEY } from './messages.js';
import type { AppContext } from '../context.js';

export type CaptureSpeed = 'fast' | 'slow';
export const POLL_KEY = 'poll.interval.ms';

type Cfg = Pick<AppContext['cfg'], 'CAPTURE_SLOW_POLL' | 'CAPTURE_SPEED_WINDOW' | 'CAPTURE_SLOW_AT' | 'CAPTURE_FAST_AT'>;

/**
 * How many of a project's recent messages the supervisor counts: wantedSpeed only compares the
 * count with CAPTURE_FAST_AT and CAPTURE_SLOW_AT, so counting stops one past the larger of them.
 * Uncapped, the supervisor counted every message of the window each check: at 1,000 messages a
 * second, 60,000 index entries every 5 s, 185 ms of the control database each time.
 */
export function recentMessagesCap(cfg: Pick<Cfg, 'CAPTURE_SLOW_AT' | 'CAPTURE_FAST_AT'>): number {
  return Math.max(cfg.CAPTURE_FAST_AT, cfg.CAPTURE_SLOW_AT + 1);
}

/** The speed a running connector should have now, given its project's recent messages (counted up to recentMessagesCap). */
export function wantedSpeed(cfg: Cfg, current: CaptureSpeed, recentMessages: number, atSpeedForMs: number): CaptureSpeed {
  if (cfg.CAPTURE_SLOW_POLL <= 0) return 'fast';
  if (current === 'slow') return recentMessages >= cfg.CAPTURE_FAST_AT ? 'fast' : 'slow';
  return recentMessages <= cfg.CAPTURE_SLOW_AT && atSpeedForMs >= cfg.CAPTURE_SPEED_WINDOW ? 'slow' : 'fast';
}

/**
 * PUTs the connector's config with the speed's poll interval ('fast': the template's). Returns
 * false when the connector is gone (the supervisor's other checks deal with that).
 */
export async function applySpeed(ctx: Pick<AppContext, 'connect' | 'cfg'>, connector: string, speed: CaptureSpeed, templatePoll: string): Promise<boolean> {
  const config = await ctx.connect.config(connector);
  if (!config) return false;
  const poll = speed === 'slow' ? String(ctx.cfg.CAPTURE_SLOW_POLL) : templatePoll;
  if (config[POLL_KEY] === poll) return true;
  // A config without the message prefix is an older build's, read before this start's refresh
  // PUT the template: written back (after a 409 retry), it would undo the refresh under an armed
  // prefix and every webhook message would go unread (messages.ts). The refresh fixes the config;
  // the speed is applied at a later check.
  if (!config[MESSAGE_PREFIX_KEY]) return false;
  const { name: _name, ...rest } = config;
  await ctx.connect.upsert(connector, { ...rest, [POLL_KEY]: poll });
  return true;
}
