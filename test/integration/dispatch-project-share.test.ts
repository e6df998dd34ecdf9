// A project's share of the dispatcher (delivery/endpoints/project-share.ts). Found by an attacker's
// review (2026-11-29): a project whose endpoints answer 200 slowly (no fault: no window shrinks, no
// circuit opens) on a few ports held every dispatcher slot, and another project's request waited
// for them (277 ms → 24.9 s). The share is off by default (config.ts); here DISPATCH_CONCURRENCY=8
// stands in for 256 and DISPATCH_PROJECT_SHARE=2 for a quarter of it, so the
// attacker alone may have up to 6 attempts in flight, and the last 2 slots stay for projects under
// their share. The attacker's messages are all delivered in the end: waiting, not lost.
import http from 'node:http';
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';

const HOST = '127.0.0.2';
const CONCURRENCY = 8;
const HOLD_MS = 8_000;

describe('one project’s slow endpoints leave the other projects their share of the dispatcher', () => {
  let svc: TestService;
  let attacker: TestProject;
  let victim: TestProject;
  let adb: pg.Client;
  let vdb: pg.Client;
  const victimRx = new Receiver();
  const servers: http.Server[] = [];
  const ports: number[] = [];
  let inflight = 0;
  let maxInflight = 0;
  let answered = 0;

  beforeAll(async () => {
    await victimRx.start(HOST);
    // three endpoints of the attacker (ports), each answering 200 after HOLD_MS
    for (let i = 0; i < 3; i++) {
      const s = http.createServer((req, res) => {
        maxInflight = Math.max(maxInflight, ++inflight);
        req.resume();
        setTimeout(() => {
          inflight--;
          answered++;
          res.writeHead(200).end('ok');
        }, HOLD_MS);
      });
      await new Promise<void>((r) => s.listen(0, HOST, r));
      servers.push(s);
      ports.push((s.address() as net.AddressInfo).port);
    }
    svc = await startTestService({ roles: ['api', 'dispatcher', 'projector'], env: { OUTBOUND_ALLOW_CIDRS: `${HOST}/32`, DISPATCH_CONCURRENCY: String(CONCURRENCY), DISPATCH_PROJECT_SHARE: '2' } });
    attacker = await svc.project('pro');
    victim = await svc.project('pro');
    for (const p of [attacker, victim]) await svc.manage(p, 'POST', '/outbox/enable');
    adb = new pg.Client({ connectionString: attacker.databaseUrl });
    vdb = new pg.Client({ connectionString: victim.databaseUrl });
    await adb.connect();
    await vdb.connect();
  });
  afterAll(async () => {
    await adb?.end();
    await vdb?.end();
    await svc?.stop();
    await victimRx.stop();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  it('delivers the victim’s request while the attacker’s slow requests hold what they may', async () => {
    // 12 messages: each endpoint's initial window (4) × 3 endpoints, more than the 8 slots
    const ids = (
      await adb.query(
        `select base.http_request('POST', 'http://${HOST}:' || p || '/slow', '{}'::jsonb, '{}'::jsonb, null, 60000) as id from unnest($1::int[]) p, generate_series(1, 4)`,
        [ports],
      )
    ).rows.map((r) => r.id as string);
    await eventually(async () => inflight >= CONCURRENCY - 2, 30_000, 'the attacker holding all it may');
    await vdb.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n":1}'::jsonb)`, [`${victimRx.url}/during`]);
    await eventually(async () => victimRx.to('/during').length > 0, 60_000, 'the victim’s request delivered');
    // delivered while the attacker's first requests were still unanswered: it did not wait for them
    expect(answered).toBe(0);
    expect(maxInflight).toBe(CONCURRENCY - 2);
    // and the attacker's are all delivered in time: held back, never lost
    await eventually(
      async () => {
        const r = await svc.ctx.db.query("select count(*)::int as n from deliveries where project_ref = $1 and id = any($2::uuid[]) and status = 'delivered'", [attacker.ref, ids]);
        return r.rows[0].n === ids.length;
      },
      90_000,
      'the attacker’s messages delivered',
    );
    expect(maxInflight).toBe(CONCURRENCY - 2);
  }, 150_000);
});
