// A project's share of a dispatcher process's attempts. DISPATCH_CONCURRENCY slots serve every
// project, and endpoint windows (window.ts) are per endpoint: a project with many endpoints (ports,
// names, webhooks) answering slowly but successfully (a 2xx is never a fault, so no window shrinks
// and no circuit opens) could have every slot in flight and every other project's messages wait
// (found by an attacker's review, 2026-11-29: a victim's delivery went from 277 ms to 24.9 s).
//
// The rule, work-conserving: a project may always start an attempt while it has fewer than SHARE
// in flight (DISPATCH_PROJECT_SHARE, default a quarter of DISPATCH_CONCURRENCY); beyond that only
// while the process has more than SHARE slots free. So one busy project alone still uses three
// quarters of the slots, and whatever it does the last SHARE slots stay for projects under their
// share. An attempt that may not start waits, FIFO, without its dispatcher slot (as for an
// endpoint's window), and beyond ENDPOINT_WINDOW_QUEUE waiting for one project it is held
// ('concurrency'). Counted in memory per consumer of a process (the main dispatcher and the retry
// consumer each have DISPATCH_CONCURRENCY slots: gate.ts keeps shares per Limiter), for attempts
// past their endpoint's window.
import { DispatcherStoppingError, WindowFullError, type DispatchSlot, type Ticket } from './window.js';

interface Waiter {
  project: string;
  grant: () => void;
}

export class ProjectShares {
  readonly #inflight = new Map<string, number>();
  readonly #waiting: Waiter[] = [];
  readonly #queued = new Map<string, number>();
  #total = 0;

  constructor(
    /** DISPATCH_CONCURRENCY */
    readonly size: number,
    /** DISPATCH_PROJECT_SHARE */
    readonly share: number,
    /** most attempts of one project waiting; later ones are held */
    readonly queue: number,
  ) {}

  /** Attempts of the project past this gate now (tests, metrics). */
  inflight(project: string): number {
    return this.#inflight.get(project) ?? 0;
  }

  #may(project: string): boolean {
    return this.inflight(project) < this.share || this.#total < this.size - this.share;
  }

  /**
   * Waits until the project may start an attempt (giving the dispatcher slot back meanwhile).
   * WindowFullError: too many of its attempts wait already (hold it); DispatcherStoppingError: the
   * dispatcher stopped while it waited.
   */
  async acquire(project: string, slot?: DispatchSlot): Promise<Ticket> {
    const queued = this.#queued.get(project) ?? 0;
    if (queued === 0 && this.#may(project)) {
      this.#count(project);
      return this.#ticket(project);
    }
    if (queued >= this.queue) throw new WindowFullError('too many messages of this project wait for a dispatcher slot');
    slot?.yield();
    this.#queued.set(project, queued + 1);
    // counted in flight by #pump when it grants
    await new Promise<void>((grant) => this.#waiting.push({ project, grant }));
    const ticket = this.#ticket(project);
    if (slot && !(await slot.retake())) {
      ticket.done(null);
      throw new DispatcherStoppingError();
    }
    return ticket;
  }

  #count(project: string): void {
    this.#inflight.set(project, this.inflight(project) + 1);
    this.#total++;
  }

  #ticket(project: string): Ticket {
    let finished = false;
    return {
      done: () => {
        if (finished) return;
        finished = true;
        const n = this.inflight(project) - 1;
        if (n > 0) this.#inflight.set(project, n);
        else this.#inflight.delete(project);
        this.#total--;
        this.#pump();
      },
    };
  }

  /**
   * Grants waiters, oldest first, each as soon as its project may start: a project over its share
   * does not hold up one under it, and a project's own waiters keep their order (once one of them
   * may not start, its later ones are passed over in this round). Granting only adds to what is in
   * flight, so no project passed over could start later in the same round.
   */
  #pump(): void {
    const blocked = new Set<string>();
    for (let i = 0; i < this.#waiting.length; ) {
      const w = this.#waiting[i];
      if (!blocked.has(w.project) && this.#may(w.project)) {
        this.#waiting.splice(i, 1);
        const left = (this.#queued.get(w.project) ?? 1) - 1;
        if (left > 0) this.#queued.set(w.project, left);
        else this.#queued.delete(w.project);
        this.#count(w.project);
        w.grant();
      } else {
        blocked.add(w.project);
        i++;
      }
    }
  }
}
