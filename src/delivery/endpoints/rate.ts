// The per-endpoint rate limit (a webhook's `rate_limit`, requests per second), respected across
// every dispatcher process: the state is one row per endpoint in the control database
// (endpoint_rate), updated by one statement per send. The algorithm is GCRA (the generic cell rate
// algorithm, as in ATM networks and redis-cell): the row keeps the theoretical arrival time `tat`
// of the next request; a request is given the slot max(tat, now) and moves tat one interval
// (1 s / rate) on. Sends are thus spaced one interval apart whatever process makes them, so any
// one-second window sees at most rate + 1 requests. Time is the database's clock, shared by all.
//
// A slot less than `tolerance` away is waited for in the process (the attempt sleeps, holding its
// dispatcher slot); a later one is refused without being taken, and the message is held
// (gate.ts), so a backlog never ties up the dispatcher. tolerance = min(1 s, 32 intervals): at most
// ~32 attempts of one endpoint sleep at a time.
import type { AppContext } from '../../context.js';
import type { Endpoint } from './keys.js';

export const toleranceMs = (rate: number) => Math.min(1000, (32 * 1000) / rate);

/** Milliseconds to wait before sending, or null when the next slot is too far (hold the message). */
export async function takeSlot(ctx: Pick<AppContext, 'db'>, e: Endpoint, rate: number): Promise<number | null> {
  const interval = 1000 / rate;
  const r = await ctx.db.query(
    `with c as (select clock_timestamp() as t)
     insert into endpoint_rate as r (project_ref, endpoint, tat)
     select $1, $2, c.t + $3 * interval '1 millisecond' from c
     on conflict (project_ref, endpoint) do update
        set tat = greatest(r.tat, (select t from c)) + $3 * interval '1 millisecond'
      where greatest(r.tat, (select t from c)) <= (select t from c) + $4 * interval '1 millisecond'
     returning greatest(0, extract(epoch from (r.tat - $3 * interval '1 millisecond' - (select t from c))) * 1000)::float8 as wait_ms`,
    [e.project, e.key, interval, toleranceMs(rate)],
  );
  return r.rows[0] ? Number(r.rows[0].wait_ms) : null;
}
