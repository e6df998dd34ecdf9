// One trigger per webhook on its table, calling base.webhook_trigger(<webhook id>). Creating,
// updating or deleting a webhook re-creates or drops its trigger in the project database.
import pg from 'pg';

export interface WebhookTriggerSpec {
  id: string;
  schema: string;
  table: string;
  events: ('INSERT' | 'UPDATE' | 'DELETE')[];
}

export const triggerName = (webhookId: string) => `webhook_${webhookId.replace(/-/g, '')}`;

export async function installWebhookTrigger(c: pg.ClientBase, w: WebhookTriggerSpec): Promise<void> {
  const table = `${pg.escapeIdentifier(w.schema)}.${pg.escapeIdentifier(w.table)}`;
  const events = [...new Set(w.events)].sort().join(' or ');
  // drop + create rather than "create or replace" so a change of events is applied on any version
  await c.query(`drop trigger if exists ${pg.escapeIdentifier(triggerName(w.id))} on ${table}`);
  await c.query(
    `create trigger ${pg.escapeIdentifier(triggerName(w.id))} after ${events} on ${table} for each row execute function base.webhook_trigger(${pg.escapeLiteral(w.id)})`,
  );
}

export async function dropWebhookTrigger(c: pg.ClientBase, w: Pick<WebhookTriggerSpec, 'id' | 'schema' | 'table'>): Promise<void> {
  const exists = await c.query('select 1 from pg_class t join pg_namespace n on n.oid = t.relnamespace where n.nspname = $1 and t.relname = $2', [w.schema, w.table]);
  if (exists.rowCount === 0) return;
  await c.query(`drop trigger if exists ${pg.escapeIdentifier(triggerName(w.id))} on ${pg.escapeIdentifier(w.schema)}.${pg.escapeIdentifier(w.table)}`);
}
