// Slow start: a cap per endpoint on the attempts this process has in flight to it, which grows
// while the endpoint answers and shrinks when it fails (docs/delivery.md, "Slow start"). The
// circuit breaker (health.ts) counts faults and opens only at its next flush (every 250 ms): without
// a window, a burst of 300 messages to a dead endpoint was sent whole before the first failures
// were counted. With one, the burst costs about CIRCUIT_FAILURE_THRESHOLD requests.
//
// The rule is TCP's (RFC 5681), counted in attempts instead of bytes:
//   - a new endpoint (or one idle for IDLE_RESET_MS) starts at ENDPOINT_WINDOW_INITIAL;
//   - every answer that is not an endpoint fault (a 2xx, or a 4xx other than 408/425/429) adds 1
//     below ssthresh (slow start: the window doubles every round trip), 1/window above it; it grows
//     only while it is in use (half of it in flight, or messages waiting), up to
//     ENDPOINT_WINDOW_MAX and the webhook's max_in_flight;
//   - an endpoint fault (isEndpointFault: 5xx, 408, 425, 429, timeout, network error) halves it,
//     once per round trip (a fault of an attempt sent before the last cut does not cut again);
//   - after PAUSE_AFTER faults in a row the endpoint is paused: nothing is sent for PAUSE_MS
//     (doubling while faults go on, up to CIRCUIT_COOLDOWN), then one attempt. PAUSE_AFTER is
//     CIRCUIT_FAILURE_THRESHOLD (10 when circuits are off), so by then the circuit has the faults
//     it needs to open at its next flush, and the waiting messages are held by the gate.
// Answers that say nothing of the endpoint (an unknown secret, a blocked address, an internal
// error, a message held or ended without a request) leave the window as it is.
//
// A message waiting for its endpoint's window gives its dispatcher slot back (DispatchSlot) and
// takes one again before it sends: hundreds of messages queued for one slow endpoint do not keep
// the other endpoints' messages from their slots. At most ENDPOINT_WINDOW_QUEUE messages wait per
// endpoint in a process; beyond that the gate holds them ('concurrency', released by the releaser
// at CIRCUIT_RELEASE_RATE). Windows are per process and in memory: N dispatchers send up to N
// windows to one endpoint, and a restart starts every endpoint again at ENDPOINT_WINDOW_INITIAL.
import { endpointWindowSize, endpointWindowWaiting, endpointWindowWaits } from '../../lib/metrics.js';
import type { AttemptOutcome } from '../../outbound/index.js';
import { endpointId, isEndpointFault, type Endpoint } from './keys.js';

/** The dispatcher slot an attempt holds (consume/offsets.ts): given back while waiting. */
export interface DispatchSlot {
  /** what the slot is taken from (the consumer's Limiter): a project's share is counted per source */
  readonly source?: object;
  yield(): void;
  /** false: the dispatcher is stopping, the attempt must not be made */
  retake(): Promise<boolean>;
}

export interface Ticket {
  /** The attempt's outcome, or null when no request was made (held, ended, crashed before it). */
  done(outcome: Pick<AttemptOutcome, 'outcome' | 'reason' | 'httpStatus'> | null): void;
}

export interface WindowOptions {
  /** 0: no adaptive window (a webhook's max_in_flight still caps) */
  max: number;
  initial: number;
  queue: number;
  pauseAfter: number;
  pauseMs: number;
  pauseMaxMs: number;
  /**
   * The clock of pauses and idle periods, in ms: monotonic (performance.now), so that a step of the
   * wall clock (NTP, a suspended VM) neither lengthens nor cuts a pause. Tests pass their own.
   */
  now?: () => number;
}

export class WindowFullError extends Error {}

/**
 * The dispatcher stopped while this attempt waited for its endpoint's window: no request was made,
 * and none may be. Not an outcome: the attempt records nothing, its record stays uncommitted, and
 * the partition's next owner makes it (recording it as a failure would add a retry of a message
 * the next owner also sends: two requests for one attempt).
 */
export class DispatcherStoppingError extends Error {
  constructor() {
    super('the dispatcher is stopping: not attempted');
  }
}

/** Nothing in flight this long: the window starts again from ENDPOINT_WINDOW_INITIAL (RFC 2861). */
export const IDLE_RESET_MS = 1000;
const SWEEP_MS = 60_000;

interface Waiter {
  grant: (t: Ticket) => void;
}

interface Win {
  cwnd: number;
  ssthresh: number;
  /** the webhook's max_in_flight as last read, or null */
  cap: number | null;
  inflight: number;
  queue: Waiter[];
  /** endpoint faults in a row */
  faults: number;
  pausedUntil: number;
  pauseMs: number;
  timer: NodeJS.Timeout | undefined;
  /** tickets handed out, and how many had been when the window was last cut */
  seq: number;
  cutAt: number;
  idleSince: number;
}

export class EndpointWindows {
  readonly #wins = new Map<string, Win>();
  readonly #now: () => number;
  #swept: number;

  constructor(readonly opts: WindowOptions) {
    this.#now = opts.now ?? (() => performance.now());
    this.#swept = this.#now();
  }

  get adaptive(): boolean {
    return this.opts.max > 0;
  }

  /** Attempts this endpoint may have in flight now. */
  limit(e: Pick<Endpoint, 'project' | 'key'>): number | undefined {
    const w = this.#wins.get(endpointId(e));
    return w && this.#limit(w, this.#now());
  }

  #limit(w: Win, now: number): number {
    const cap = w.cap ?? Infinity;
    if (!this.adaptive) return cap;
    if (w.pausedUntil > now) return 0;
    return Math.max(1, Math.min(Math.floor(w.cwnd), cap));
  }

  /**
   * Waits for room in the endpoint's window (giving the dispatcher slot back meanwhile).
   * Throws WindowFullError when ENDPOINT_WINDOW_QUEUE messages already wait (hold this one), and
   * DispatcherStoppingError when the dispatcher stopped while it waited.
   */
  async acquire(e: Endpoint, cap: number | null, slot?: DispatchSlot): Promise<Ticket> {
    const now = this.#now();
    if (now - this.#swept > SWEEP_MS) this.#sweep(now);
    const id = endpointId(e);
    let w = this.#wins.get(id);
    if (!w) {
      w = { cwnd: this.opts.initial, ssthresh: Infinity, cap, inflight: 0, queue: [], faults: 0, pausedUntil: 0, pauseMs: 0, timer: undefined, seq: 0, cutAt: 0, idleSince: now };
      this.#wins.set(id, w);
    }
    w.cap = cap;
    if (this.adaptive && w.inflight === 0 && w.queue.length === 0 && w.pausedUntil <= now && now - w.idleSince > IDLE_RESET_MS) {
      w.cwnd = Math.min(w.cwnd, this.opts.initial);
    }
    if (w.queue.length === 0 && w.inflight < this.#limit(w, now)) return this.#grant(w);
    if (w.queue.length >= this.opts.queue) {
      endpointWindowWaits.inc({ result: 'held' });
      throw new WindowFullError('too many messages wait for this endpoint');
    }
    endpointWindowWaits.inc({ result: 'waited' });
    slot?.yield();
    endpointWindowWaiting.inc();
    const ticket = await new Promise<Ticket>((grant) => w.queue.push({ grant }));
    endpointWindowWaiting.dec();
    if (slot && !(await slot.retake())) {
      ticket.done(null);
      throw new DispatcherStoppingError();
    }
    return ticket;
  }

  /** A ticket outside the window (a probe of a half-open circuit): its outcome still counts. */
  force(e: Endpoint): Ticket {
    const id = endpointId(e);
    let w = this.#wins.get(id);
    if (!w) {
      w = { cwnd: this.opts.initial, ssthresh: Infinity, cap: null, inflight: 0, queue: [], faults: 0, pausedUntil: 0, pauseMs: 0, timer: undefined, seq: 0, cutAt: 0, idleSince: this.#now() };
      this.#wins.set(id, w);
    }
    return this.#grant(w);
  }

  #grant(w: Win): Ticket {
    w.inflight++;
    const seq = ++w.seq;
    endpointWindowSize.observe(Math.min(Math.floor(w.cwnd), w.cap ?? Infinity));
    let finished = false;
    return {
      done: (outcome) => {
        if (finished) return;
        finished = true;
        // grows only while it is used: an endpoint sent one message at a time keeps a small window
        const used = w.queue.length > 0 || w.inflight * 2 >= Math.floor(w.cwnd);
        w.inflight--;
        if (outcome && this.adaptive) this.#adjust(w, outcome, seq, used);
        if (w.inflight === 0 && w.queue.length === 0) w.idleSince = this.#now();
        this.#pump(w);
      },
    };
  }

  #adjust(w: Win, outcome: Pick<AttemptOutcome, 'outcome' | 'reason' | 'httpStatus'>, seq: number, used: boolean): void {
    const max = Math.min(this.opts.max, w.cap ?? Infinity);
    if (isEndpointFault(outcome)) {
      w.faults++;
      if (seq > w.cutAt) {
        w.ssthresh = Math.max(2, w.cwnd / 2);
        w.cwnd = Math.max(1, w.cwnd / 2);
        w.cutAt = w.seq;
      }
      if (w.faults >= this.opts.pauseAfter) {
        w.pauseMs = w.pauseMs ? Math.min(w.pauseMs * 2, this.opts.pauseMaxMs) : this.opts.pauseMs;
        w.pausedUntil = this.#now() + w.pauseMs;
        w.cwnd = 1;
        this.#wakeAt(w, w.pauseMs + 1);
      }
      return;
    }
    const answered = outcome.outcome === 'delivered' || outcome.httpStatus != null;
    if (!answered) return;
    w.faults = 0;
    w.pauseMs = 0;
    w.pausedUntil = 0;
    if (!used) return;
    w.cwnd = Math.min(max, w.cwnd < w.ssthresh ? w.cwnd + 1 : w.cwnd + 1 / w.cwnd);
  }

  #pump(w: Win): void {
    const now = this.#now();
    while (w.queue.length > 0 && w.inflight < this.#limit(w, now)) w.queue.shift()!.grant(this.#grant(w));
    // A Node timer counts from the event loop's clock, read when the loop's turn began: armed late
    // in a busy turn, the pause's timer can fire a few ms before pausedUntil by this clock. With
    // nothing in flight to call done(), the waiters would then wait for ever: wake again at the end.
    if (w.queue.length > 0 && w.pausedUntil > now) this.#wakeAt(w, w.pausedUntil - now + 1);
  }

  #wakeAt(w: Win, ms: number): void {
    clearTimeout(w.timer);
    w.timer = setTimeout(() => this.#pump(w), ms);
    w.timer.unref?.();
  }

  /** Forgets endpoints idle for a while (nothing in flight or waiting, no pause going on). */
  #sweep(now: number): void {
    this.#swept = now;
    for (const [id, w] of this.#wins) {
      if (w.inflight === 0 && w.queue.length === 0 && w.pausedUntil <= now && now - w.idleSince > SWEEP_MS) this.#wins.delete(id);
    }
  }
}
