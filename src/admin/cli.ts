// Operator commands: npm run admin -- <command> [--flags]
// Every command prints one JSON object as its last line, so scripts can read the result.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from '../config.js';
import { closeContext, createContext, resolveInfrastructure } from '../create-context.js';
import { createLogger } from '../lib/logger.js';
import { createProject, ensureOwner, issueOwnerToken, revokeOwnerToken, setPlan, projectUrl, recordOperatorAudit, type Plan } from '../projects/index.js';
import type { AppContext } from '../context.js';
import { rebuildDeliveries } from '../delivery/index.js';
import { replayCommand } from './replay.js';
import { reseal } from './reseal.js';
import { disableProjectOutbox, ensureOutboxEnabled } from '../outbox/index.js';

const PLANS = ['free', 'pro', 'enterprise'];

const usage = `usage: npm run admin -- <command>
  create-project --ref <ref> --plan <free|pro|enterprise> [--owner <email>] [--database-url <url>]
  issue-token --owner <email> [--name <name>]
  revoke-token --token <token-or-id>
  set-plan --ref <ref> --plan <plan>
  list-projects
  rebuild-deliveries [--project <ref>]   replay the delivery-events topic into the deliveries tables
  replay --ref <ref> [--status dead|failed|dead,failed] [--since <iso>] [--until <iso>] [--webhook <id>] [--host <host>]
                                         re-enqueue dead (or failed) deliveries as new runs (docs/retries.md)
  recapture --ref <ref>                  after a lost replication slot: drop the project's connector, slot and publication and
                                         create them again (capture starts from now; see README, Replication slots)
  reseal [--check]                       re-encrypt every sealed value under MASTER_KEY (key rotation; --check only counts;
                                         exits 1 while a value needs MASTER_KEY_PREVIOUS or opens with no key)`;

type Handler = (ctx: AppContext, v: Record<string, string | undefined>) => Promise<unknown>;

/** Who ran the command, for the audit trail: the OS user and host (ADMIN_OPERATOR overrides, e.g. a ticket). */
const operator = () => process.env.ADMIN_OPERATOR?.slice(0, 200) || `${os.userInfo().username}@${os.hostname()}`;

const commands: Record<string, Handler> = {
  replay: async (ctx, v) => {
    const out = (await replayCommand(ctx, v)) as { matched: number; replayed: number };
    await recordOperatorAudit(ctx.db, operator(), v.ref!, {
      action: 'outbox.replay',
      resourceType: 'outbox',
      details: { status: (v.status ?? 'dead').split(','), since: v.since ?? null, until: v.until ?? null, webhook_id: v.webhook ?? null, host: v.host ?? null, replayed: out.replayed },
    });
    return out;
  },
  reseal: (ctx, v) => reseal(ctx, { check: v.check === 'true' }),
  recapture: async (ctx, v) => {
    need(v, 'ref');
    const r = await ctx.db.query('select outbox_enabled_at from projects where ref = $1', [v.ref]);
    if (r.rowCount === 0) throw new Error(`no project ${v.ref}`);
    if (!r.rows[0].outbox_enabled_at) throw new Error(`the outbox of ${v.ref} is not enabled; nothing to recapture`);
    await disableProjectOutbox(ctx, v.ref!);
    // no OUTBOX_SLOT_WAIT here: the old slot is gone, and giving up would leave schema base enqueueing
    // what nothing captures; the slot waits for open transactions as long as they last
    await ensureOutboxEnabled(ctx, v.ref!, { slotWaitMs: 0 });
    const at = new Date().toISOString();
    await recordOperatorAudit(ctx.db, operator(), v.ref!, { action: 'outbox.recapture', resourceType: 'outbox', resourceId: v.ref, details: { capture_from: at } });
    return { ref: v.ref, recaptured: true, capture_from: at };
  },
  'rebuild-deliveries': (ctx, v) =>
    rebuildDeliveries(ctx, { project: v.project, progress: (done, total) => process.stderr.write(`\rreplayed ${done}/${total} events${done >= total ? "\n" : ""}`) }),
  'create-project': async (ctx, v) => {
    need(v, 'ref', 'plan');
    if (!PLANS.includes(v.plan!)) throw new Error(`--plan must be one of ${PLANS.join(', ')}`);
    const p = await createProject(ctx, { ref: v.ref!, plan: v.plan as Plan, ownerEmail: v.owner ?? `owner-${v.ref}@localhost`, databaseUrl: v['database-url'] });
    await recordOperatorAudit(ctx.db, operator(), p.ref, {
      action: 'project.create',
      resourceType: 'project',
      resourceId: p.ref,
      details: { plan: v.plan, owner_id: p.owner_id, managed_database: !v['database-url'] },
    });
    const { token } = await issueOwnerToken(ctx, p.owner_id, `create-project ${v.ref}`);
    return { ref: p.ref, owner_token: token, anon_key: p.anon_key, project_url: p.project_url, database_url: p.database_url };
  },
  'issue-token': async (ctx, v) => {
    need(v, 'owner');
    const owner = await ensureOwner(ctx, v.owner!);
    const t = await issueOwnerToken(ctx, owner, v.name ?? 'cli');
    return { owner: v.owner, token_id: t.id, owner_token: t.token };
  },
  'revoke-token': async (ctx, v) => {
    need(v, 'token');
    return { revoked: await revokeOwnerToken(ctx, v.token!) };
  },
  'set-plan': async (ctx, v) => {
    need(v, 'ref', 'plan');
    if (!PLANS.includes(v.plan!)) throw new Error(`--plan must be one of ${PLANS.join(', ')}`);
    const before = await ctx.db.query('select plan from projects where ref = $1', [v.ref]);
    await setPlan(ctx, v.ref!, v.plan as Plan);
    await recordOperatorAudit(ctx.db, operator(), v.ref!, { action: 'project.set_plan', resourceType: 'project', resourceId: v.ref, details: { from: before.rows[0]?.plan ?? null, to: v.plan } });
    return { ref: v.ref, plan: v.plan };
  },
  'list-projects': async (ctx) => {
    const r = await ctx.db.query(
      'select j.ref, j.plan, o.email as owner, j.outbox_enabled_at is not null as outbox_enabled, j.created_at from projects j join owners o on o.id = j.owner_id order by j.created_at',
    );
    return { projects: r.rows.map((p) => ({ ...p, project_url: projectUrl(ctx, p.ref) })) };
  },
};

function need(v: Record<string, string | undefined>, ...keys: string[]) {
  const missing = keys.filter((k) => !v[k]);
  if (missing.length) throw new Error(`missing ${missing.map((k) => `--${k}`).join(', ')}\n${usage}`);
}

export function registerAdminCommand(name: string, fn: Handler) {
  commands[name] = fn;
}

async function main() {
  const [cmd, ...rest] = process.argv.slice(2);
  const handler = cmd ? commands[cmd] : undefined;
  if (!handler) {
    console.error(usage);
    process.exit(2);
  }
  // declared as strings, so `--ref acme` reads as ref = "acme" (undeclared flags would be booleans)
  const flags = ['ref', 'plan', 'owner', 'database-url', 'name', 'token', 'project', 'status', 'since', 'until', 'webhook', 'host'];
  const { values } = parseArgs({ args: rest, strict: false, options: Object.fromEntries(flags.map((f) => [f, { type: 'string' as const }])) });
  // an undeclared flag (--check) reads as the string "true"
  const v = Object.fromEntries(Object.entries(values).map(([k, x]) => [k, typeof x === 'string' ? x : x === true ? 'true' : undefined]));
  const cfg = loadConfig();
  // logs on stderr: stdout is the command's JSON answer
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn', { format: cfg.LOG_FORMAT, to: 'stderr' });
  const ctx = await createContext(cfg, log, await resolveInfrastructure(cfg, log));
  try {
    const out = await handler(ctx, v);
    console.log(JSON.stringify(out));
    if (out && typeof out === 'object' && (out as { ok?: unknown }).ok === false) process.exitCode = 1;
  } finally {
    await closeContext(ctx);
  }
}

main().catch((e) => {
  console.error(e instanceof ConfigError ? e.message : (e as Error).message);
  process.exit(1);
});
