// Slow start on the real pipeline (Postgres, Debezium, Kafka, real HTTP receivers; docs/delivery.md,
// "Slow start"): a burst of 300 rows to a webhook whose endpoint answers 503 costs a handful of
// requests before the circuit opens, and every message is held and delivered once the endpoint is
// back; a healthy endpoint's window grows past its start; a webhook's max_in_flight caps the
// requests in flight that its receiver sees.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';

const ENV = {
  OUTBOUND_ALLOW_CIDRS: '127.0.0.2/31',
  RETRY_TIME_SCALE: '0.001', // 30 ms, 120 ms, 600 ms … between attempts
  // the defaults of the circuit (10 faults in 60 s, half of the attempts), a short cool-down
  CIRCUIT_COOLDOWN: '1500ms',
  CIRCUIT_COOLDOWN_MAX: '3s',
  CIRCUIT_RELEASE_RATE: '200',
  DISPATCH_COMMIT_INTERVAL: '300ms',
};

/** A receiver that answers 200 after `delayMs` and counts the requests it has in flight at once. */
class SlowReceiver {
  inflight = 0;
  maxInflight = 0;
  readonly ids = new Set<number>();
  requests = 0;
  url = '';
  #server!: http.Server;
  constructor(private readonly delayMs: number) {}
  async start(host: string) {
    this.#server = http.createServer((req, res) => {
      this.inflight++;
      this.requests++;
      this.maxInflight = Math.max(this.maxInflight, this.inflight);
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        setTimeout(() => {
          try {
            this.ids.add(JSON.parse(Buffer.concat(chunks).toString('utf8')).record.id);
          } catch {
            // not a row's payload
          }
          this.inflight--;
          res.writeHead(200);
          res.end();
        }, this.delayMs);
      });
    });
    await new Promise<void>((r) => this.#server.listen(0, host, r));
    this.url = `http://${host}:${(this.#server.address() as AddressInfo).port}`;
  }
  reset() {
    this.maxInflight = this.inflight;
    this.ids.clear();
    this.requests = 0;
  }
  async stop() {
    this.#server.closeAllConnections();
    await new Promise((r) => this.#server.close(r));
  }
}

describe('slow start: per-endpoint windows of attempts in flight', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const dead = new ScriptedReceiver();
  const slow = new SlowReceiver(40);

  beforeAll(async () => {
    await dead.start('127.0.0.2');
    await slow.start('127.0.0.3');
    svc = await startTestService({ roles: ['api'], env: ENV });
    // one dispatcher process: windows are per process (two would each start at ENDPOINT_WINDOW_INITIAL)
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    expect((await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/enable`)).status).toBeLessThan(300);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.burst_items (id serial primary key, name text); create table public.fast_items (id serial primary key, name text); create table public.capped_items (id serial primary key, name text)');
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await dead.stop();
    await slow.stop();
  });

  const call = async (method: string, path: string, body?: unknown) => (await svc.manage(project, method, path, body)).body;
  const insert = (table: string, n: number) => db.query(`insert into public.${table} (name) select 'row ' || g from generate_series(1, $1) g`, [n]);
  const heldOf = async (hookId: string) => Number((await svc.ctx.db.query('select count(*) from held_messages where endpoint = $1', [`webhook:${hookId}`])).rows[0].count);

  it('a burst of 300 rows to a dead endpoint costs at most 0.1 request per row, and all 300 are delivered once it is back', async () => {
    dead.script('/burst', { status: 503, body: 'down' });
    const hook = await call('POST', '/webhooks', { name: 'burst', table: 'public.burst_items', events: ['INSERT'], url: `${dead.url}/burst`, timeout_ms: 2000 });
    expect(hook.max_in_flight).toBeNull();

    await insert('burst_items', 300); // one statement, one transaction
    await eventually(async () => (await call('GET', `/webhooks/${hook.id}`)).circuit.state !== 'closed', 30_000, 'the circuit to open');
    // every message held: the burst's and the retries of those that were attempted
    await eventually(async () => (await heldOf(hook.id)) === 300, 60_000, 'all 300 messages to be held');
    const whileDown = dead.to('/burst').length;
    console.log(`slow start: the dead endpoint saw ${whileDown} requests for a burst of 300 rows (${(whileDown / 300).toFixed(3)} per row)`);
    expect(whileDown).toBeGreaterThanOrEqual(1);
    expect(whileDown).toBeLessThanOrEqual(30);

    // back up: the next probe closes the circuit, the held messages are released and delivered
    dead.script('/burst', { status: 200 });
    await eventually(async () => {
      const ids = new Set(dead.to('/burst').slice(whileDown).map((h) => JSON.parse(h.body).record.id));
      return ids.size === 300;
    }, 90_000, 'all 300 rows delivered once the endpoint is back');
    expect(await heldOf(hook.id)).toBe(0);
  });

  it('a healthy endpoint gets a whole burst, its window growing past ENDPOINT_WINDOW_INITIAL (4)', async () => {
    const hook = await call('POST', '/webhooks', { name: 'fast', table: 'public.fast_items', events: ['INSERT'], url: `${slow.url}/fast`, timeout_ms: 5000 });
    slow.reset();
    await insert('fast_items', 400);
    await eventually(async () => slow.ids.size === 400, 60_000, 'all 400 rows delivered');
    expect(slow.requests).toBe(400);
    expect(slow.maxInflight).toBeGreaterThan(16);
    expect(await heldOf(hook.id)).toBe(0);
  });

  it("a webhook's max_in_flight caps the requests its receiver has in flight", async () => {
    for (const bad of [0, 1001, 2.5, '3']) {
      const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/webhooks`, { table: 'public.capped_items', events: ['INSERT'], url: `${slow.url}/capped`, max_in_flight: bad });
      expect(r.status).toBe(400);
    }
    const hook = await call('POST', '/webhooks', { name: 'capped', table: 'public.capped_items', events: ['INSERT'], url: `${slow.url}/capped`, timeout_ms: 5000, max_in_flight: 3 });
    expect(hook.max_in_flight).toBe(3);
    expect((await call('GET', `/webhooks/${hook.id}`)).max_in_flight).toBe(3);
    await eventually(async () => slow.inflight === 0, 10_000, 'the receiver to be idle');
    slow.reset();
    await insert('capped_items', 60);
    await eventually(async () => slow.ids.size === 60, 60_000, 'all 60 rows delivered');
    expect(slow.maxInflight).toBeLessThanOrEqual(3);
    expect(slow.maxInflight).toBeGreaterThanOrEqual(2);

    // null again: the adaptive window alone
    const patched = await call('PATCH', `/webhooks/${hook.id}`, { max_in_flight: null });
    expect(patched.max_in_flight).toBeNull();
    const audit = ((await call('GET', '/audit?limit=100')) as any[]).find((e) => e.action === 'webhook.create' && e.resource_id === hook.id);
    expect(audit.details.max_in_flight).toBe(3);
  });
});

describe('slow start: messages waiting for a slow endpoint do not take every dispatcher slot', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const quick = new ScriptedReceiver();
  const crawl = new SlowReceiver(500);

  beforeAll(async () => {
    await quick.start('127.0.0.2');
    await crawl.start('127.0.0.3');
    // 8 attempts in flight per consumer: 40 messages queued for one endpoint would take them all
    // if waiting for a window kept a slot
    svc = await startTestService({ roles: ['api'], env: { ...ENV, DISPATCH_CONCURRENCY: '8' } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    expect((await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/enable`)).status).toBeLessThan(300);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.crawl_items (id serial primary key, name text); create table public.quick_items (id serial primary key, name text)');
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await quick.stop();
    await crawl.stop();
  });

  const call = async (method: string, path: string, body?: unknown) => (await svc.manage(project, method, path, body)).body;

  it('another endpoint is served while 40 messages wait for a webhook with max_in_flight 1', async () => {
    await call('POST', '/webhooks', { name: 'crawl', table: 'public.crawl_items', events: ['INSERT'], url: `${crawl.url}/crawl`, timeout_ms: 5000, max_in_flight: 1 });
    quick.script('/quick', { status: 200 });
    await call('POST', '/webhooks', { name: 'quick', table: 'public.quick_items', events: ['INSERT'], url: `${quick.url}/quick`, timeout_ms: 5000 });
    // one transaction: the crawling endpoint's 40 messages come first on the topic
    await db.query(`begin; insert into public.crawl_items (name) select 'row ' || g from generate_series(1, 40) g;
                    insert into public.quick_items (name) select 'row ' || g from generate_series(1, 20) g; commit`);
    await eventually(async () => quick.to('/quick').length >= 20, 60_000, 'the quick endpoint to get its 20 messages');
    // one request at a time, 500 ms each: with a slot per waiting message the quick endpoint would
    // have waited for about 32 of them; it waited for a handful at most
    console.log(`slow start: the quick endpoint was served after ${crawl.ids.size} of the crawling endpoint's 40 messages`);
    expect(crawl.ids.size).toBeLessThanOrEqual(20);
    expect(crawl.maxInflight).toBe(1);
    await eventually(async () => crawl.ids.size === 40, 60_000, 'all 40 crawling messages delivered');
  });
});
