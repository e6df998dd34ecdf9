// On the first `npm start` with an empty control database, create a development project so a new
// user has something to call at once; its credentials are printed as one JSON line.
import type { AppContext } from '../context.js';
import { createProject, issueOwnerToken } from '../management/projects.js';
import { ensureOutboxEnabled } from '../outbox/service.js';

export async function bootstrapDevProject(ctx: AppContext): Promise<void> {
  if (!ctx.cfg.DEV_BOOTSTRAP) return;
  const r = await ctx.db.query('select count(*)::int as n from projects');
  if (r.rows[0].n > 0) return;
  const p = await createProject(ctx, { ref: 'dev', plan: 'enterprise', ownerEmail: 'dev@localhost' });
  const { token } = await issueOwnerToken(ctx, p.owner_id, 'bootstrap');
  // so base.http_request and base.send_email work in the dev project from the first minute
  await ensureOutboxEnabled(ctx, p.ref);
  ctx.log.info('created a development project (plan enterprise); keep this owner token, it is shown once:');
  console.log(JSON.stringify({ ref: p.ref, owner_token: token, anon_key: p.anon_key, project_url: p.project_url, database_url: p.database_url }));
}
