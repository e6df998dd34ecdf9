// The gate in front of every attempt (attempt/pipeline.ts): send now, wait a moment for the rate
// limit, or hold the message for its endpoint. A held message spends no attempt and no age budget
// (message.ts, held-ms); the releaser (releaser.ts) puts it back on the outbox topic when its
// endpoint may be tried again.
//
//   - a record the releaser put back as a probe is sent (it is the half-open circuit's one try);
//   - a record it put back as 'give_up' ends dead without a request (the endpoint was given up on);
//   - a webhook that is deleted or disabled is never held: its channel ends the message dead at once;
//   - a circuit that is open or half-open holds every other message of its endpoint;
//   - a rate-limited webhook with messages already held holds the new ones too (first in, first
//     out), unless the record is one the releaser put back;
//   - a rate-limited webhook takes a slot (rate.ts): wait for a near one, hold when none is near;
//   - every other message waits for room in its endpoint's window (window.ts, slow start), and is
//     held ('concurrency') when ENDPOINT_WINDOW_QUEUE already wait; after the wait the circuit is
//     looked at again (it may have opened meanwhile). A send carries its window ticket: the
//     pipeline hands it the outcome.
//   - then for its project's share of the process (project-share.ts): a project over it waits
//     while the process has few slots free, and is held ('concurrency') when too many of its
//     attempts wait already.
import type { AppContext } from '../../context.js';
import { endpointHolds } from '../../lib/metrics.js';
import type { WebhookConfig } from '../channels/send-config.js';
import { encodeMessage, type OutboxMessage } from '../message.js';
import type { AttemptOutcome } from '../../outbound/index.js';
import type { EndpointHealth } from './health.js';
import type { Endpoint } from './keys.js';
import { takeSlot } from './rate.js';
import { EndpointWindows, WindowFullError, type DispatchSlot, type Ticket } from './window.js';
import { ProjectShares } from './project-share.js';

export type HoldReason = 'circuit' | 'rate_limit' | 'concurrency';
export type Admission = { kind: 'send'; ticket?: Ticket } | { kind: 'hold'; reason: HoldReason } | { kind: 'end'; outcome: AttemptOutcome };

const SEND: Admission = { kind: 'send' };

export const GIVEN_UP =
  'not attempted: the endpoint failed every probe for ENDPOINT_DISABLE_AFTER, so its held messages end here (retry or replay them once it is back)';

export class EndpointGate {
  /** slow start per endpoint, in this process */
  readonly windows: EndpointWindows;
  /** each project's share of a consumer's attempts (the main dispatcher and the retry consumer have a Limiter each) */
  readonly #shares = new WeakMap<object, ProjectShares>();
  readonly #defaultShares: ProjectShares;
  readonly #share: number;

  constructor(
    private readonly ctx: Pick<AppContext, 'db' | 'log' | 'cfg'>,
    readonly health: EndpointHealth,
  ) {
    const { cfg } = ctx;
    this.windows = new EndpointWindows({
      max: cfg.ENDPOINT_WINDOW_MAX,
      initial: cfg.ENDPOINT_WINDOW_INITIAL,
      queue: cfg.ENDPOINT_WINDOW_QUEUE,
      pauseAfter: cfg.CIRCUIT_FAILURE_THRESHOLD || 10,
      pauseMs: 1000,
      pauseMaxMs: Math.max(1000, cfg.CIRCUIT_COOLDOWN),
    });
    // 0: off (config.ts)
    this.#share = cfg.DISPATCH_PROJECT_SHARE;
    this.#defaultShares = this.#newShares();
  }

  #newShares(): ProjectShares {
    return new ProjectShares(this.ctx.cfg.DISPATCH_CONCURRENCY, this.#share, this.ctx.cfg.ENDPOINT_WINDOW_QUEUE);
  }

  /** The shares of the consumer the slot belongs to. */
  shares(slot?: DispatchSlot): ProjectShares {
    const source = slot?.source;
    if (!source) return this.#defaultShares;
    let s = this.#shares.get(source);
    if (!s) this.#shares.set(source, (s = this.#newShares()));
    return s;
  }

  /** `slot`: the dispatcher slot of the attempt, given back while it waits for its endpoint's window. */
  async admit(msg: OutboxMessage, e: Endpoint | null, webhook: WebhookConfig | null, fresh?: () => Promise<WebhookConfig | null>, slot?: DispatchSlot): Promise<Admission> {
    if (!e) return SEND;
    // just disabled, enabled or reset: the cached config may be up to a TTL behind (the fresh copy
    // also replaces the cached one the channel reads next)
    if (fresh && this.health.recentlyAnnounced(e)) webhook = await fresh();
    if (msg.released === 'give_up') return { kind: 'end', outcome: { outcome: 'dead', reason: 'endpoint_given_up', error: GIVEN_UP, durationMs: 0 } };
    if (msg.kind === 'webhook' && !webhook?.enabled) return SEND;
    const view = this.health.view(e);
    // the half-open circuit's one request, rate limit or window or not (its outcome counts in the window)
    if (msg.released === 'probe') return { kind: 'send', ticket: this.windows.force(e) };
    if (this.health.enabled && view && view.state !== 'closed') return { kind: 'hold', reason: 'circuit' };
    // behind a rate-limited webhook's backlog, new messages queue (first in, first out); after a
    // circuit closes they are sent at once while the backlog drains at CIRCUIT_RELEASE_RATE
    if (webhook?.rateLimit && !msg.released && view && view.held > 0) return { kind: 'hold', reason: 'rate_limit' };
    let ticket: Ticket;
    try {
      ticket = await this.windows.acquire(e, webhook?.maxInFlight ?? null, slot);
    } catch (err) {
      if (err instanceof WindowFullError) return { kind: 'hold', reason: 'concurrency' };
      throw err;
    }
    if (this.#share > 0) {
      try {
        const share = await this.shares(slot).acquire(e.project, slot);
        const endpoint = ticket;
        ticket = {
          done: (outcome) => {
            share.done(null);
            endpoint.done(outcome);
          },
        };
      } catch (err) {
        ticket.done(null);
        if (err instanceof WindowFullError) return { kind: 'hold', reason: 'concurrency' };
        throw err;
      }
    }
    try {
      // the circuit may have opened while this message waited for the window
      const after = this.health.view(e);
      if (this.health.enabled && after && after.state !== 'closed') {
        ticket.done(null);
        return { kind: 'hold', reason: 'circuit' };
      }
      if (webhook?.rateLimit) {
        const wait = await takeSlot(this.ctx, e, webhook.rateLimit);
        if (wait === null) {
          ticket.done(null);
          return { kind: 'hold', reason: 'rate_limit' };
        }
        if (wait >= 1) await new Promise((r) => setTimeout(r, wait));
      }
    } catch (err) {
      ticket.done(null);
      throw err;
    }
    return { kind: 'send', ticket };
  }

  /**
   * Takes the record off the topic into held_messages: once this resolves the dispatcher may
   * commit its offset. A record read twice is held once (unique attempt key). The key starts with
   * the project (migration 102): a message id is chosen in the project's database, so another
   * project's record with the same id must not pass for this one already held, or this one's
   * offset would be committed with no row.
   */
  async hold(msg: OutboxMessage, e: Endpoint, reason: HoldReason): Promise<void> {
    const { headers } = encodeMessage(msg, { dueAt: 0 });
    await this.ctx.db.query(
      `insert into held_messages (project_ref, endpoint, message_id, run, attempt, reason, headers, value)
       values ($1, $2, $3, $4, $5, $6, $7, $8) on conflict (project_ref, message_id, run, attempt) do nothing`,
      [e.project, e.key, msg.id, msg.run, msg.attempt, reason, headers, msg.rawValue],
    );
    this.health.noteHeld(e);
    endpointHolds.inc({ reason });
    this.ctx.log.debug({ message: msg.id, project: e.project, endpoint: e.key, reason }, 'message held for its endpoint');
  }
}
