// One attempt of one message, from "taken" to "recorded":
//
//   1. describe the target (URL as written, or recipient); if the first attempt of a run is still
//      running after PENDING_AFTER_MS, publish DeliveryQueued, which makes the delivery visible as
//      `pending` (not awaited; a late one cannot undo the outcome: the projection only moves
//      forward). Most attempts finish sooner, and their outcome is their only event: one event per
//      message instead of two (docs/benchmark.md, tuning log).
//   2. the channel makes the attempt and classifies it (never throws for the target's fault)
//   3. a failed outcome goes to ladder.onFailed, a dead one to ladder.onDead (the seam to the retry ladder, docs/delivery.md)
//   4. DeliveryAttempted is published and the ledger row written (OutcomeRecorder)
// Only when process() resolves may the dispatcher commit the record's offset.
//
// An ordered message (ordering/keys.ts) first meets its key: queued behind the key's head when it
// has one ('parked', nothing attempted), made the head before it goes up the retry ladder or is
// held, and, once it has a final outcome as a head, followed by the next queued message.
import type { Dispatcher } from 'undici';
import type { AppContext } from '../../context.js';
import { channels } from '../channels/registry.js';
import type { ChannelDeps, DeliveryTarget } from '../channels/channel.js';
import type { DeliveryDirectory } from '../channels/send-config.js';
import { encodeEvent, refused, type DeliveryAttempted, type RefusedFieldsLog } from '../events.js';
import type { LadderDecision, RetryLadder } from '../retry/ladder.js';
import { callbackOf, isoToMicros, type OutboxMessage } from '../message.js';
import type { AttemptOutcome } from '../../outbound/index.js';
import type { OutcomeRecorder } from './recorder.js';
import type { EndpointGate } from '../endpoints/gate.js';
import { endpointOf } from '../endpoints/keys.js';
import { DispatcherStoppingError, type DispatchSlot, type Ticket } from '../endpoints/window.js';
import { deliveryAttempts, deliveryAttemptSeconds, deliveryLatencySeconds } from '../../lib/metrics.js';
import { isFresh, isOrdered, type Head, type OrderingStore } from '../ordering/keys.js';

/** How long a first attempt runs before its delivery is shown as `pending`. */
export const PENDING_AFTER_MS = 1000;

export interface PipelineDeps {
  ctx: AppContext;
  directory: DeliveryDirectory;
  http: Dispatcher;
  recorder: OutcomeRecorder;
  ladder: RetryLadder;
  /** circuit breaker, rate limit and hold per endpoint (endpoints/); absent: every message is attempted */
  gate?: EndpointGate;
  /** ordered delivery (ordering/keys.ts); absent: ordering keys are ignored */
  ordering?: OrderingStore;
}

/**
 * 'held': the message was taken off the topic for its endpoint; 'parked': queued behind the head of
 * its ordering key. Neither made an attempt or recorded anything; the same record comes back later.
 */
export type ProcessResult = 'recorded' | 'held' | 'parked';

/**
 * What the dispatch consumer knows of an ordered message's key: `head` as read for its batch (null:
 * no head), valid only when `chained` is false (no earlier message of the key ran in this process
 * since the read, which could have blocked it).
 */
export interface OrderingHint {
  head: Head | null;
  chained: boolean;
}

export class AttemptPipeline {
  readonly #channelDeps: ChannelDeps;
  /** where encodeEvent reports a field it had to record null (made once, not per attempt) */
  readonly #refused: RefusedFieldsLog;

  constructor(private readonly deps: PipelineDeps) {
    this.#channelDeps = { ctx: deps.ctx, directory: deps.directory, http: deps.http };
    this.#refused = refused(deps.ctx);
  }

  /**
   * `hint`: what the dispatch consumer read of an ordered message's key; `slot`: the dispatcher slot
   * this attempt holds, given back while it waits for its endpoint's window (endpoints/window.ts)
   */
  async process(msg: OutboxMessage, hint?: OrderingHint, slot?: DispatchSlot): Promise<ProcessResult> {
    const { ctx, recorder, ladder, gate, directory, ordering } = this.deps;
    const ordered = ordering && isOrdered(msg) ? msg : null;
    // a head's final outcome lets the next message of its key go (advance, below)
    let head = false;
    if (ordered) {
      if (!isFresh(ordered)) head = true;
      else if (hint && !hint.chained && hint.head === null) head = false;
      else if (hint && !hint.chained && hint.head?.messageId === ordered.id) head = true;
      else {
        const r = await ordering!.park(ordered);
        if (r === 'parked') {
          await this.#publishQueued(msg, Date.now());
          return 'parked';
        }
        head = r === 'head';
      }
    }
    const channel = channels[msg.kind];
    const { target, common } = await this.#identity(msg);
    const createdAt = common.message_created_at;
    const startedAt = Date.now();
    const pending =
      msg.attempt === 1
        ? setTimeout(() => {
            recorder
              .record([encodeEvent({ type: 'DeliveryQueued', data: { ...common, queued_at: startedAt } }, this.#refused)])
              .catch((err) => ctx.log.warn({ err, message: msg.id }, 'publishing the pending state failed'));
          }, PENDING_AFTER_MS)
        : undefined;
    const endpoint = gate ? endpointOf(msg, target) : null;
    let outcome: AttemptOutcome;
    let sent = false;
    let ticket: Ticket | undefined; // room in the endpoint's window (slow start), given back below
    try {
      outcome = ladder.beforeAttempt?.(msg) as AttemptOutcome;
      if (!outcome) {
        const webhook = endpoint?.webhookId ? await directory.webhook(msg.project, endpoint.webhookId) : null;
        const fresh = () => directory.webhook(msg.project, endpoint!.webhookId!, 0);
        const admission = gate && endpoint ? await gate.admit(msg, endpoint, webhook, endpoint.webhookId ? fresh : undefined, slot) : { kind: 'send' as const };
        if (admission.kind === 'hold') {
          clearTimeout(pending);
          // the key waits for this message while it is held (before the hold: never open with it away)
          if (ordered) await ordering!.block(ordered, 'held');
          await gate!.hold(msg, endpoint!, admission.reason);
          // a message held before its first attempt is listed as pending, like one waiting to be sent
          // (best effort: the message is held, so failing here must not make it an attempt too)
          if (msg.attempt === 1) {
            await recorder
              .record([encodeEvent({ type: 'DeliveryQueued', data: { ...common, queued_at: startedAt } }, this.#refused)])
              .catch((err) => ctx.log.warn({ err, message: msg.id }, 'publishing the pending state of a held message failed'));
          }
          return 'held';
        }
        if (admission.kind === 'send') ticket = admission.ticket;
        // A head may have copies (its retry record, a record fetched again after a rebalance, a
        // release): whichever got here second must not send once the first has ended, or the key's
        // next message, already sent, would be followed by this older one. Read last, just before
        // the request, after every wait.
        if (admission.kind === 'send' && ordered && head && (await ordering!.ended(ordered))) {
          clearTimeout(pending);
          ticket?.done(null);
          ctx.log.debug({ message: msg.id, project: msg.project, key: ordered.orderingKey }, 'a copy of an ordered message that has already ended; not sent again');
          return 'recorded';
        }
        sent = admission.kind === 'send';
        outcome = admission.kind === 'end' ? admission.outcome : await channel.attempt(msg, this.#channelDeps);
      }
    } catch (err) {
      // cut off by the stop before its request: no outcome to record (the next owner makes it)
      if (err instanceof DispatcherStoppingError) throw err;
      // A bug or an unavailable control DB, not the target's fault: retryable.
      ctx.log.error({ err, message: msg.id, project: msg.project }, 'delivery attempt crashed');
      outcome = { outcome: 'failed', reason: 'internal', error: 'internal error during the attempt', durationMs: Date.now() - startedAt };
    } finally {
      clearTimeout(pending);
    }
    ticket?.done(outcome);
    // a probe always reports, sent or not (one that ended before its request, e.g. past its age
    // budget, counts as unanswered), so its half-open circuit never waits for the probe timeout
    if (endpoint && gate && (sent || msg.released === 'probe')) {
      if (msg.released === 'probe') await gate!.health.probeDone(endpoint, outcome).catch((err) => ctx.log.warn({ err, message: msg.id }, 'recording the probe outcome failed; the probe is sent again later'));
      else gate!.health.observe(endpoint, outcome);
    }
    const finishedAt = Date.now();
    deliveryAttempts.inc({ kind: msg.kind, outcome: outcome.outcome });
    deliveryAttemptSeconds.observe({ kind: msg.kind, outcome: outcome.outcome }, Math.max(0, outcome.durationMs) / 1000);
    if (msg.attempt === 1 && msg.run === 1) deliveryLatencySeconds.observe({ kind: msg.kind }, Math.max(0, finishedAt - createdAt / 1000) / 1000);

    let decision: LadderDecision | { final: true; status: 'delivered' };
    if (outcome.outcome === 'failed') {
      // the key waits for this message while it is on the ladder (before its retry record exists)
      if (ordered) {
        await ordering!.block(ordered, 'retry');
        head = true;
      }
      decision = await ladder.onFailed(msg, outcome);
    } else {
      if (outcome.outcome === 'dead') await ladder.onDead(msg, outcome);
      decision = { final: true, status: outcome.outcome };
    }

    // every field written out, no `...common`: on Node 20's V8 a spread followed by more properties
    // costs about a microsecond a property (35 µs for this event, 0.06 µs written out, measured
    // 2026-11-27), which was 5 % of the service's CPU under load (docs/benchmark.md)
    const event: DeliveryAttempted = {
      message_id: common.message_id,
      project: common.project,
      kind: common.kind,
      run: common.run,
      webhook_id: common.webhook_id,
      target: common.target,
      method: common.method,
      callback_function: common.callback_function,
      message_created_at: common.message_created_at,
      ordering_key: common.ordering_key,
      seq: common.seq,
      attempt: msg.attempt,
      outcome: outcome.outcome,
      status: decision.status,
      final: decision.final,
      http_status: outcome.httpStatus ?? null,
      smtp_code: outcome.smtpCode ?? null,
      error: outcome.error ?? null,
      response_body: outcome.responseBody ?? null,
      retry_after_ms: outcome.retryAfterMs ?? null,
      next_attempt_at: 'nextAttemptAt' in decision ? (decision.nextAttemptAt ?? null) : null,
      started_at: startedAt,
      finished_at: finishedAt,
      duration_ms: Math.max(0, Math.round(outcome.durationMs)),
    };
    await recorder.record([encodeEvent({ type: 'DeliveryAttempted', data: event }, this.#refused)], {
      project: msg.project,
      messageId: msg.id,
      run: msg.run,
      attempt: msg.attempt,
      outcome: outcome.outcome,
      final: decision.final,
    });
    ctx.log.debug(
      { message: msg.id, project: msg.project, kind: msg.kind, run: msg.run, attempt: msg.attempt, outcome: outcome.outcome, status: outcome.httpStatus, error: outcome.error, ms: event.duration_ms },
      'delivery attempt recorded',
    );
    // after the outcome is recorded: a crash before this leaves the head for the sweep to advance
    if (ordered && head && decision.final) await ordering!.advance(ordered.project, ordered.orderingKey, ordered.id);
    return 'recorded';
  }

  /** What every event of this delivery repeats: who it is, where it goes, its place in its key. */
  async #identity(msg: OutboxMessage) {
    const target = await channels[msg.kind].describe(msg, this.#channelDeps).catch((): DeliveryTarget => ({ target: '(unknown)', method: null, webhookId: null }));
    const common = {
      message_id: msg.id,
      project: msg.project,
      kind: msg.kind,
      run: msg.run,
      webhook_id: target.webhookId,
      target: target.target,
      method: target.method,
      callback_function: callbackOf(msg),
      message_created_at: isoToMicros(msg.firstCreatedAt) ?? Date.now() * 1000,
      ordering_key: msg.orderingKey ?? null,
      seq: msg.seq ?? null,
    };
    return { target, common };
  }

  /** DeliveryQueued for a message that waits before its first attempt (best effort: it waits either way). */
  async #publishQueued(msg: OutboxMessage, at: number): Promise<void> {
    const { ctx, recorder } = this.deps;
    const { common } = await this.#identity(msg);
    await recorder
      .record([encodeEvent({ type: 'DeliveryQueued', data: { ...common, queued_at: at } }, this.#refused)])
      .catch((err) => ctx.log.warn({ err, message: msg.id }, 'publishing the pending state of a queued message failed'));
  }
}
