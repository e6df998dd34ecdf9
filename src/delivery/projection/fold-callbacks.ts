// CallbackInvoked events into the deliveries projection (called by fold.ts inside its
// transaction). Events of one message share a partition and arrive in order, so the last one of a
// batch per (project, delivery, run) is the state; a replay or rebuild applies the same sequence
// and ends on the same values. A callback of an older run never overwrites a newer run's row.
import type { PoolClient } from '../../db/index.js';
import type { CallbackInvoked, DeliveryEvent } from '../events.js';

export async function applyCallbackEvents(client: PoolClient, events: DeliveryEvent[]): Promise<void> {
  const last = new Map<string, CallbackInvoked>();
  for (const ev of events) if (ev.type === 'CallbackInvoked') last.set(`${ev.data.project}:${ev.data.message_id}:${ev.data.run}`, ev.data);
  if (last.size === 0) return;
  await client.query(
    `update deliveries d set callback_status = x.status, callback_error = x.error, callback_attempts = x.attempts
       from jsonb_to_recordset($1::jsonb) as x(project text, message_id uuid, run int, status text, error text, attempts int)
      where d.project_ref = x.project and d.id = x.message_id and d.run = x.run`,
    [JSON.stringify([...last.values()])],
  );
}
