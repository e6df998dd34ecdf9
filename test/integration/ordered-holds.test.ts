// Ordered delivery through endpoint holds (docs/delivery.md, "Ordered delivery"): while a webhook's
// circuit is open, or its rate limit holds messages, the changes of each row must still reach the
// receiver in commit order, and every row's last change must arrive once the endpoint takes them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

const ENV = {
  OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32',
  RETRY_TIME_SCALE: '0.001',
  CIRCUIT_FAILURE_THRESHOLD: '3',
  CIRCUIT_FAILURE_RATIO: '0.5',
  CIRCUIT_WINDOW: '60s',
  CIRCUIT_COOLDOWN: '1500ms',
  CIRCUIT_COOLDOWN_MAX: '3s',
  CIRCUIT_RELEASE_RATE: '20',
  DISPATCH_COMMIT_INTERVAL: '300ms',
};

/** Answers 503 while `down`; per row, notes any version older than one it acknowledged. */
class Receiver {
  down = false;
  requests = 0;
  readonly acked = new Map<string, number>();
  readonly violations: string[] = [];
  #server!: http.Server;
  url = '';

  async start(): Promise<void> {
    this.#server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        this.requests++;
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const row = body.record ?? body.old_record;
        const id = `${body.table}:${row.id}`;
        const v = Number(row.v);
        if ((this.acked.get(id) ?? -1) > v) this.violations.push(`${id}: got version ${v} after acknowledging ${this.acked.get(id)}`);
        if (this.down) return void res.writeHead(503).end();
        this.acked.set(id, Math.max(this.acked.get(id) ?? -1, v));
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.2', r));
    this.url = `http://127.0.0.2:${(this.#server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((r) => this.#server.close(() => r()));
  }
}

describe('ordered delivery through endpoint holds', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    svc = await startTestService({ roles: ['api'], env: ENV });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const call = (method: string, path: string, body?: unknown) => svc.api(project.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);

  async function updates(table: string, rows: number, versions: number): Promise<void> {
    for (let v = 1; v < versions; v++) {
      await db.query('begin');
      for (let id = 1; id <= rows; id++) await db.query(`update public.${table} set v = v + 1 where id = $1`, [id]);
      await db.query('commit');
    }
  }

  it('keeps each row in order while its circuit is open, and delivers every last version once it closes', async () => {
    const ROWS = 10;
    const VERSIONS = 5;
    await db.query('create table public.held_rows (id int primary key, v int not null)');
    const hook = await call('POST', '/webhooks', { table: 'public.held_rows', events: ['INSERT', 'UPDATE'], url: `${receiver.url}/held` });
    expect(hook.body.ordering).toBe('row');
    receiver.down = true;
    await db.query(`insert into public.held_rows select i, 0 from generate_series(1, ${ROWS}) i`);
    // the circuit opens on the first failures: the heads are held, their later changes queue behind them
    await eventually(async () => {
      const r = await call('GET', `/webhooks/${hook.body.id}`);
      return r.body.circuit.state !== 'closed';
    }, 30_000, 'the circuit to open');
    await updates('held_rows', ROWS, VERSIONS);
    const blocked = await eventually(async () => {
      const r = await call('GET', '/outbox/blocked-keys?limit=50');
      const mine = r.body.keys.filter((k: any) => k.webhook_id === hook.body.id);
      return mine.length === ROWS && mine.every((k: any) => k.queued === VERSIONS - 1) ? mine : null;
    }, 30_000, 'every row blocked behind its first change, with its later changes queued');
    expect(new Set(blocked.map((k: any) => k.head.reason))).not.toContain('next');
    receiver.down = false;
    await eventually(async () => [...Array(ROWS).keys()].every((i) => receiver.acked.get(`held_rows:${i + 1}`) === VERSIONS - 1), 90_000, 'every row\'s last version after the circuit closed');
    expect(receiver.violations).toEqual([]);
    await eventually(async () => ((await call('GET', '/outbox/blocked-keys')).body.keys as any[]).every((k) => k.webhook_id !== hook.body.id), 30_000, 'no key of the webhook blocked any more');
  }, 180_000);

  it('keeps each row in order behind a rate limit that holds messages', async () => {
    const ROWS = 10;
    const VERSIONS = 4;
    await db.query('create table public.paced_rows (id int primary key, v int not null)');
    const hook = await call('POST', '/webhooks', { table: 'public.paced_rows', events: ['INSERT', 'UPDATE'], url: `${receiver.url}/paced`, rate_limit: 5 });
    expect(hook.status).toBe(201);
    await db.query(`insert into public.paced_rows select i, 0 from generate_series(1, ${ROWS}) i`);
    await updates('paced_rows', ROWS, VERSIONS);
    await eventually(async () => [...Array(ROWS).keys()].every((i) => receiver.acked.get(`paced_rows:${i + 1}`) === VERSIONS - 1), 90_000, 'every row\'s last version through the rate limit');
    expect(receiver.violations).toEqual([]);
  }, 180_000);
});
