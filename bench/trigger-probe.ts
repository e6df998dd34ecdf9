// One-off A / B (2026-11-29): what the webhook trigger's pg_cast probe (base-schema.sql, users'
// casts to json) costs a row. 50,000-row INSERTs into a hooked table, best of 5, with the trigger as
// installed and with the probe taken out. Run: npx tsx bench/trigger-probe.ts (the local stack up).
import pg from 'pg';
import { installBaseSchema } from '../src/outbox/index.js';

const admin = process.env.ADMIN_URL ?? 'postgres://postgres@127.0.0.1:54329/postgres';
const name = `trigger_probe_${process.pid}`;
const url = admin.replace(/\/postgres$/, `/${name}`);

async function main() {
  const a = new pg.Client({ connectionString: admin });
  await a.connect();
  await a.query(`create database ${name}`);
  try {
    await installBaseSchema(url);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`create table t (id bigserial primary key, note text, n int);
      create trigger hook after insert on t for each row execute function base.webhook_trigger('00000000-0000-4000-8000-000000000000', 'v2', '1', 'id')`);
    const run = async (label: string) => {
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        await c.query('truncate t');
        const t0 = performance.now();
        await c.query(`insert into t (note, n) select repeat('x', 120), g from generate_series(1, 50000) g`);
        times.push(performance.now() - t0);
      }
      times.sort((x, y) => x - y);
      console.log(`${label}: best ${times[0].toFixed(0)} ms, median ${times[2].toFixed(0)} ms (${times.map((x) => x.toFixed(0)).join(', ')})`);
    };
    const def = (await c.query(`select pg_get_functiondef('base.webhook_trigger()'::regprocedure) as d`)).rows[0].d as string;
    const without = def.replace(/,\n\s+exists \(select 1 from pg_cast[^\n]*\n\s+into idle, prefix, user_casts/, ' into idle, prefix').replace(/  if user_casts then[\s\S]*?\n  end if;\n/, '');
    if (without === def || without.includes('from pg_cast k')) throw new Error('probe not found in the trigger');
    for (let round = 0; round < 2; round++) {
      await c.query(def);
      await run(`with the probe    (round ${round + 1})`);
      await c.query(without);
      await run(`without the probe (round ${round + 1})`);
    }
    await c.end();
  } finally {
    await a.query(`drop database if exists ${name} with (force)`);
    await a.end();
  }
}
void main();
