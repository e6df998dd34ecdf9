// Steps 4-6 of idle capture (idle-capture.ts): the wake check, and the resumes it starts.
//
// A resume is three round trips: Connect's answer to PUT /resume, a connection to the project's
// database (to clear base.capture.idle), and the control row's update. On a loaded machine one took
// ~0.6 s (bench run AC), and when the check waited for its resumes, one after another, a hundred
// wakes a minute queued behind each other (commit -> resume p99 15.7 s). So the check starts
// resumes and does not wait for them (WakeResumer): at most one resume per project in flight, at
// most RESUMES_AT_ONCE in all, the rest queued in order. A project being resumed is left out of
// the next checks until its resume ends, so it is neither resumed twice nor offered to the slot
// advancer meanwhile.
//
// A resume first claims the project's control row: 'idle' -> 'running', only if the row is still in
// the idle period the check saw (its stopped_at). A resume that waited in the queue, or stalled,
// while the supervisor resumed the project, stopped it again and began a new idle period, then does
// nothing: it must neither clear the new period's base.capture.idle nor resume its connector. Then
// it resumes the connector and clears the flag. Meanwhile the project is half-resumed (row
// 'running', connector still STOPPED), which the supervisor's check already meets, because wakes have
// always run beside checks: it resumes the connector again, a no-op, and says nothing
// (supervisor.ts, #one, RESUME_APPLIED_MS); a resume that fails there leaves the same state, and the
// check finishes it. integration/wake-resume.test.ts holds a resume mid-way on purpose.
import type { AppContext } from '../context.js';
import { projectsToWake, setCaptureIdle, type IdleProject, type Wake } from './idle-capture.js';
import { IdleSlotAdvancer } from './slot-advancer.js';

type Ctx = Pick<AppContext, 'db' | 'connect' | 'cfg' | 'projectDbs' | 'log'>;
type Log = Pick<Ctx['log'], 'info' | 'warn'>;

/**
 * Resumes in flight at once, across projects: enough that a burst of wakes (a hundred projects
 * written to in the same second) does not queue behind slow answers, few enough that Connect's
 * REST workers and the project databases' connections are not flooded by one.
 */
export const RESUMES_AT_ONCE = 8;

/** Resumes idle projects' connectors in the background, one resume per project at a time. */
export class WakeResumer {
  readonly #running = new Map<string, Promise<void>>();
  readonly #queued = new Map<string, { wake: Wake; stoppedMs: number }>();

  constructor(
    private readonly ctx: Ctx,
    private readonly log: Log,
    private readonly advancer: IdleSlotAdvancer,
  ) {}

  /** whether this project's resume is queued or in flight (the wake check leaves it out) */
  busy(ref: string): boolean {
    return this.#running.has(ref) || this.#queued.has(ref);
  }

  /**
   * Starts (or queues) the resume of this project, unless one is already under way. `stoppedMs`:
   * the stopped_at of the idle period the check saw (IdleProject.stopped_ms).
   */
  start(wake: Wake, stoppedMs: number): void {
    if (this.busy(wake.ref)) return;
    this.#queued.set(wake.ref, { wake, stoppedMs });
    this.#pump();
  }

  /** Forgets the resumes not started yet (the supervision lock was lost, or the process stops). */
  clear(): void {
    this.#queued.clear();
  }

  /** Resolves when every resume started has ended, or after `ms`. */
  async idle(ms = Infinity): Promise<void> {
    const until = Date.now() + ms;
    while (this.#running.size > 0 && Date.now() < until) {
      await Promise.race([Promise.allSettled([...this.#running.values()]), sleep(Math.min(until - Date.now(), 2 ** 31 - 1))]);
    }
  }

  #pump(): void {
    for (const [ref, { wake, stoppedMs }] of this.#queued) {
      if (this.#running.size >= RESUMES_AT_ONCE) return;
      this.#queued.delete(ref);
      const p = resume(this.ctx, this.log, this.advancer, wake, stoppedMs)
        .catch((err) => this.log.warn({ err, project: ref, connector: wake.connector }, 'resuming an idle connector failed; the supervisor finishes it, or the next wake check tries again'))
        .finally(() => {
          this.#running.delete(ref);
          this.#pump();
        });
      this.#running.set(ref, p);
    }
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** One project's resume, its steps in order. */
async function resume(ctx: Ctx, log: Log, advancer: IdleSlotAdvancer, w: Wake, stoppedMs: number): Promise<void> {
  const claimed = await ctx.db.query<{ resumed_at: string }>(
    `update connector_supervision set state = 'running', stopped_at = null, resumed_at = now()
      where project_ref = $1 and state = 'idle' and (extract(epoch from stopped_at) * 1000)::float8 is not distinct from $2::float8
      returning resumed_at::text`,
    [w.ref, stoppedMs],
  );
  // resumed (and perhaps stopped again) since the check read it: not this resume's to do
  if (claimed.rowCount === 0) return;
  await advancer.cancel(w.ref);
  advancer.resumed(w.ref);
  await ctx.connect.setTarget(w.connector, 'resume');
  // a running connector needs no forced statistics flushes (idle-capture.ts, step 4)
  await ctx.projectDbs.pool(w.ref).then((pool) => setCaptureIdle(pool, false, ctx)).catch(() => undefined);
  // A refresh counts as activity for CAPTURE_REFRESH_RUN only, not a whole CAPTURE_IDLE_AFTER:
  // resumed_at is set that much in the past, so the usual idle rule stops it again after the
  // short run (unless a message arrives meanwhile). Run for 10 min every 30 min, a quiet project
  // would cost a quarter of a running connector. Set only now that Connect was asked: a check
  // that finds the row 'running' over a connector not resumed yet takes a recent resumed_at for
  // a resume under way (supervisor.ts, RESUME_APPLIED_MS), and a backdated one for a stop by
  // someone else, which it would resume with a whole CAPTURE_IDLE_AFTER of activity.
  const backdate = w.why === 'refresh' ? Math.max(0, ctx.cfg.CAPTURE_IDLE_AFTER - ctx.cfg.CAPTURE_REFRESH_RUN) / 1000 : 0;
  if (backdate > 0) {
    await ctx.db.query(
      `update connector_supervision set resumed_at = resumed_at - make_interval(secs => $2) where project_ref = $1 and state = 'running' and resumed_at = $3::timestamptz`,
      [w.ref, backdate, claimed.rows[0].resumed_at],
    );
  }
  log.info(
    { project: w.ref, connector: w.connector, why: w.why },
    w.why === 'write'
      ? 'database written to: connector resumed'
      : w.why === 'wal'
        ? 'connector resumed: its idle slot holds more than CAPTURE_IDLE_MAX_WAL and a message not yet captured'
        : 'connector resumed for its periodic refresh (CAPTURE_IDLE_REFRESH)',
  );
}

/**
 * Steps 4-6 for every idle project: starts the resume of those written to (or due for their
 * refresh, or whose slot holds a message step 6 found), and offers those whose slot holds too much
 * WAL to `advancer`. Returns without waiting for the resumes.
 */
export async function wakeIdleProjects(ctx: Ctx, advancer: IdleSlotAdvancer, resumer: WakeResumer): Promise<void> {
  const idle = (
    await ctx.db.query<IdleProject>(
      `select s.project_ref as ref, s.connector, s.wake_writes::text, (extract(epoch from s.stopped_at) * 1000)::float8 as stopped_ms, p.database_url_enc
         from connector_supervision s join projects p on p.ref = s.project_ref where s.state = 'idle'`,
    )
  ).rows.filter((p) => !resumer.busy(p.ref));
  const handedBack = advancer.takeResumes().filter((w) => idle.some((p) => p.ref === w.ref));
  if (idle.length === 0) return;
  const wakes = await projectsToWake(ctx, idle, advancer);
  const resume = [...wakes.filter((w) => w.why !== 'wal'), ...handedBack.filter((b) => !wakes.some((w) => w.ref === b.ref && w.why !== 'wal'))];
  advancer.offer(wakes.filter((w) => w.why === 'wal' && !resume.some((r) => r.ref === w.ref)));
  const stopped = new Map(idle.map((p) => [p.ref, p.stopped_ms]));
  for (const w of resume) resumer.start(w, stopped.get(w.ref)!);
}
