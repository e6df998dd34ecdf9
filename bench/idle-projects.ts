// Idle projects for the benchmark (docs/benchmark.md, "Idle projects"): run as a child process with
// the benchmark service's environment (same control database, topic prefix and Connect), so the
// projects are the service's own, made by the service's own code as the Management API makes them.
//
//   create <prefix> <count> <batch>   creates <count> projects <prefix>-<i>, each with its outbox
//                                     enabled (base schema, replication slot, publication, Debezium
//                                     connector), <batch> at a time, waiting after each batch until
//                                     the service's supervisor has stopped their connectors (idle):
//                                     a hundred Debezium tasks starting at once would only measure
//                                     two starved cores. One JSON line per batch on stdout.
//   drop <prefix>                     disables the outbox of every project <prefix>-* (connector and
//                                     slot removed) and drops its database.
import pg from 'pg';
import { closeContext, createContext, resolveInfrastructure } from '../src/create-context.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/lib/logger.js';
import { createProject, projectRoleName } from '../src/projects/index.js';
import { disableProjectOutbox, ensureOutboxEnabled } from '../src/outbox/index.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => {});
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function main() {
  const [cmd, prefix, countArg, batchArg] = process.argv.slice(2);
  if (!prefix || !/^[a-z0-9-]+$/.test(prefix)) throw new Error('usage: idle-projects create <prefix> <count> <batch> | drop <prefix>');
  const cfg = loadConfig();
  const log = createLogger('warn', { format: 'json', to: 'stderr' });
  const ctx = await createContext(cfg, log, await resolveInfrastructure(cfg, log));
  try {
    if (cmd === 'create') {
      const count = Number(countArg);
      const batch = Math.max(1, Number(batchArg ?? 10));
      for (let from = 0; from < count; from += batch) {
        const refs: string[] = [];
        const t0 = Date.now();
        for (let i = from; i < Math.min(count, from + batch); i++) {
          const ref = `${prefix}-${i}`;
          await createProject(ctx, { ref, plan: 'free', ownerEmail: `owner-${prefix}@localhost` });
          await ensureOutboxEnabled(ctx, ref);
          refs.push(ref);
        }
        // the supervisor stops each connector CAPTURE_IDLE_AFTER after its outbox was enabled
        const deadline = Date.now() + cfg.CAPTURE_IDLE_AFTER + 180_000;
        let idle = 0;
        while (Date.now() < deadline) {
          const r = await ctx.db.query(`select count(*)::int as n from connector_supervision where state = 'idle' and project_ref = any($1)`, [refs]);
          idle = r.rows[0].n;
          if (idle === refs.length) break;
          await sleep(2000);
        }
        console.log(JSON.stringify({ created: from + refs.length, idle_in_batch: idle, batch: refs.length, seconds: Math.round((Date.now() - t0) / 100) / 10 }));
        if (idle < refs.length) throw new Error(`only ${idle} of ${refs.length} connectors of the batch went idle in time`);
      }
    } else if (cmd === 'drop') {
      // Every project is tried, whatever failed before it: a database that still holds a logical
      // slot (its connector could not be removed, Connect restarting) cannot be dropped, so the
      // slots in it go first.
      const r = await ctx.db.query(`select ref from projects where ref like $1 || '-%' order by ref`, [prefix]);
      let failed = 0;
      for (const { ref } of r.rows as { ref: string }[]) {
        try {
          const url = await ctx.projectDbs.url(ref);
          await disableProjectOutbox(ctx, ref).catch((err) => console.error(`disabling the outbox of ${ref}: ${(err as Error).message}`));
          await ctx.projectDbs.closeAll();
          const name = decodeURIComponent(new URL(url).pathname.slice(1));
          await withClient(url, async (c) => {
            await c.query(`select pg_terminate_backend(active_pid) from pg_replication_slots where database = current_database() and active_pid is not null`);
            await c.query(`select pg_drop_replication_slot(slot_name) from pg_replication_slots where database = current_database()`);
          });
          const admin = new URL(url);
          admin.pathname = '/postgres';
          await withClient(admin.toString(), async (c) => {
            await c.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
            await c.query(`drop role if exists ${pg.escapeIdentifier(projectRoleName(ref))}`);
          });
        } catch (err) {
          failed++;
          console.error(`removing ${ref}: ${(err as Error).message}`);
        }
      }
      console.log(JSON.stringify({ dropped: r.rowCount! - failed, failed }));
      if (failed > 0) process.exitCode = 1;
    } else {
      throw new Error(`unknown command ${cmd}`);
    }
  } finally {
    await closeContext(ctx);
  }
}

main().catch((e) => {
  console.error((e as Error).stack ?? e);
  process.exit(1);
});
