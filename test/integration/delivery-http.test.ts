// base.http_request end to end on the real pipeline: SQL → Debezium → Kafka → dispatcher → a real
// receiver → Avro events → projection → Management API. The service only allows 127.0.0.2/32, where
// the receiver listens, so every other loopback address and name is a blocked target.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import http from 'node:http';
import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { decodeEvent } from '../../src/delivery/events.js';
import { eventually } from '../helpers/env.js';
import { freePort, startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';
import { committedToEnd, readTopic, runAdmin } from '../helpers/delivery-tools.js';

const SECRET = 'sk_live_5f3c9a0d7e-Very/Secret+Value';

// The net behind the causes closed where a value is read (encodeEvent, events.ts): for this one
// Retry-After the dispatcher reads it unbounded, as it did before 2026-11-27, so the attempt's
// event holds a number no Avro long here can carry. Every other value is read as the service does.
const { UNBOUNDED } = vi.hoisted(() => ({ UNBOUNDED: '4242' }));
vi.mock('../../src/delivery/channels/status-classes.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/delivery/channels/status-classes.js')>();
  return { ...real, parseRetryAfter: (v: string | string[] | undefined, now?: number) => (v === UNBOUNDED ? 2 ** 60 : real.parseRetryAfter(v, now)) };
});

describe('delivery of base.http_request', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();
  const logs: string[] = [];

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    // One attempt per message is what this file looks at: retries are parked 6 h away (the ladder
    // has its own tests), so failed deliveries stay as their first attempt left them.
    svc = await startTestService({
      roles: ['api'],
      env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', DISPATCH_CONCURRENCY: '16', RETRY_DELAYS: '6h,6h,6h,6h,6h,6h,6h' },
    });
    // The workers log into memory at debug level, so the test can look for leaked secrets.
    const log = pino({ level: 'debug' }, new Writable({ write: (chunk, _e, cb) => (logs.push(String(chunk)), cb()) }));
    workers = await startWorkers({ ...svc.ctx, log }, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    expect((await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/enable`)).status).toBeLessThan(300);
    expect((await svc.api(project.ownerToken, 'PUT', `/v1/projects/${project.ref}/secrets/API_TOKEN`, { value: SECRET })).status).toBeLessThan(300);
    expect((await svc.api(project.ownerToken, 'PUT', `/v1/projects/${project.ref}/secrets/BAD_URL`, { value: 'not a url at all' })).status).toBeLessThan(300);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    receiver.release();
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const enqueue = async (method: string, url: string, opts: { headers?: object; body?: unknown; timeoutMs?: number } = {}) =>
    (
      await db.query(`select base.http_request($1, $2, $3::jsonb, $4::jsonb, null, $5) as id`, [
        method,
        url,
        JSON.stringify(opts.headers ?? {}),
        opts.body === undefined ? null : JSON.stringify(opts.body),
        opts.timeoutMs ?? null,
      ])
    ).rows[0].id as string;

  const api = (path: string) => svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox/deliveries${path}`);
  const final = (id: string, timeoutMs = 60_000) =>
    eventually(
      async () => {
        const r = await api(`/${id}`);
        return r.status === 200 && r.body.status !== 'pending' ? r.body : null;
      },
      timeoutMs,
      `a final outcome for ${id}`,
    );

  it('delivers a committed request as written, and records it as delivered', async () => {
    const id = await enqueue('POST', `${receiver.url}/ok?x=1`, { headers: { 'x-test': 'yes' }, body: { hello: 'world' } });
    const d = await final(id);
    expect(d).toMatchObject({ id, kind: 'http', status: 'delivered', method: 'POST', target: `${receiver.url}/ok?x=1`, attempts: 1, last_http_status: 200 });
    expect(d.attempt_history).toHaveLength(1);
    expect(d.attempt_history[0]).toMatchObject({ run: 1, attempt: 1, outcome: 'delivered', http_status: 200, response_body: 'ok' });
    const got = receiver.to('/ok');
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ method: 'POST', body: '{"hello":"world"}' });
    expect(got[0].headers['x-test']).toBe('yes');
    expect(got[0].headers['content-type']).toBe('application/json');
  });

  it('does not send again a message replayed onto the topic after its outcome was recorded', async () => {
    const id = await enqueue('POST', `${receiver.url}/replayed`, { body: { n: 1 } });
    expect((await final(id)).status).toBe('delivered');
    // what Debezium does after a connector restart: the same record again, at a new offset
    const [record] = (await readTopic(svc, svc.ctx.topics.outbox)).filter((m) => m.headers?.id?.toString() === id);
    await svc.ctx.producer.send({ topic: svc.ctx.topics.outbox, messages: [{ key: record.key, value: record.value, headers: record.headers }] });
    // a message produced after the replay is delivered, so the dispatcher has passed the replay
    const later = await enqueue('POST', `${receiver.url}/after-replay`);
    await final(later);
    await committedToEnd(svc, svc.ctx.groups.dispatcher, svc.ctx.topics.outbox);
    expect(receiver.to('/replayed')).toHaveLength(1);
    expect((await api(`/${id}`)).body).toMatchObject({ status: 'delivered', attempts: 1, total_attempts: 1 });
  });

  it('keeps a secret out of what it stores when the target echoes it in another encoding', async () => {
    // found by review (2026-11-29): only the raw, JSON-escaped and encodeURIComponent forms were
    // scrubbed; the URL serialiser writes a query as Tok%20en/42%27x, many JSON encoders write / as \/
    const odd = "Tok en/42'x-odd-secret";
    expect((await svc.api(project.ownerToken, 'PUT', `/v1/projects/${project.ref}/secrets/ODD`, { value: odd })).status).toBeLessThan(300);
    const asQuery = new URL(`http://h/?k=${odd}`).search.slice(3);
    const asEscapedJson = JSON.stringify({ key: odd }).replace(/\//g, '\\/');
    receiver.answer('/odd', { status: 404, body: `Not Found: /odd?k=${asQuery} ${asEscapedJson} ${new URLSearchParams({ k: odd })}` });
    const id = await enqueue('GET', `${receiver.url}/odd?k={{secret:ODD}}`);
    const d = await final(id);
    const [got] = receiver.to('/odd');
    expect(got.path).toBe(`/odd?k=${asQuery}`); // what was sent, in the form echoed
    const kept = d.attempt_history[0].response_body as string;
    expect(kept).toContain('{{secret:ODD}}');
    for (const form of [odd, asQuery, 'Tok%20en', 'Tok+en', 'en\\/42']) expect(kept, form).not.toContain(form);
  });

  it('sends nothing for a rolled-back transaction', async () => {
    await db.query('begin');
    const rolledBack = await enqueue('GET', `${receiver.url}/rolled-back`);
    await db.query('rollback');
    const after = await enqueue('GET', `${receiver.url}/after-rollback`);
    await final(after);
    expect(receiver.to('/rolled-back')).toHaveLength(0);
    expect((await api(`/${rolledBack}`)).status).toBe(404);
  });

  it('substitutes secrets in URL, headers and body at send time, and keeps their values out of topics, tables and logs', async () => {
    receiver.answer('/secret', { status: 200, body: `echo: ${SECRET}` });
    const id = await enqueue('PUT', `${receiver.url}/secret?key={{secret:API_TOKEN}}`, {
      headers: { authorization: 'Bearer {{secret:API_TOKEN}}' },
      body: { token: '{{secret:API_TOKEN}}', nested: ['{{secret:API_TOKEN}}'] },
    });
    const d = await final(id);
    expect(d.status).toBe('delivered');
    const [got] = receiver.to('/secret');
    expect(got.path).toBe(`/secret?key=${SECRET}`);
    expect(got.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(JSON.parse(got.body)).toEqual({ token: SECRET, nested: [SECRET] });

    // what is kept is the request as written
    expect(d.target).toBe(`${receiver.url}/secret?key={{secret:API_TOKEN}}`);
    expect(d.attempt_history[0].response_body).toBe('echo: {{secret:API_TOKEN}}');
    const tables = await svc.ctx.db.query(
      `select (select json_agg(d)::text from deliveries d) || (select json_agg(a)::text from delivery_attempts a) || (select json_agg(l)::text from delivery_ledger l) as all`,
    );
    expect(tables.rows[0].all).toContain(id);
    expect(tables.rows[0].all).not.toContain(SECRET);
    const records = [...(await readTopic(svc, svc.ctx.topics.outbox)), ...(await readTopic(svc, svc.ctx.topics.events))];
    const raw = records.map((m) => `${m.key}|${JSON.stringify(m.headers)}|${m.value?.toString('latin1')}`).join('\n');
    expect(raw).toContain(id);
    expect(raw).toContain('{{secret:API_TOKEN}}');
    expect(raw).not.toContain(SECRET);
    const joined = logs.join('');
    expect(joined).toContain(id);
    expect(joined).not.toContain(SECRET);
  });

  it('fails on an unknown secret without sending anything', async () => {
    const id = await enqueue('POST', `${receiver.url}/unknown-secret`, { headers: { 'x-key': '{{secret:NOT_THERE}}' } });
    const d = await final(id);
    expect(d).toMatchObject({ status: 'failed', last_error: 'unknown secret NOT_THERE', last_http_status: null });
    expect(receiver.to('/unknown-secret')).toHaveLength(0);
  });

  it('classifies every status class as docs/delivery.md says', async () => {
    const expected: Record<number, string> = {
      200: 'delivered', 201: 'delivered', 204: 'delivered',
      301: 'dead', 302: 'dead', 307: 'dead',
      400: 'dead', 401: 'dead', 404: 'dead', 410: 'dead', 422: 'dead',
      408: 'failed', 409: 'failed', 425: 'failed', 429: 'failed',
      500: 'failed', 502: 'failed', 503: 'failed',
    };
    for (const code of Object.keys(expected)) {
      const status = Number(code);
      const headers: Record<string, string> = status >= 300 && status < 400 ? { location: `${receiver.url}/ok` } : status === 429 ? { 'retry-after': '120' } : {};
      receiver.answer(`/status/${code}`, { status, headers, body: status === 204 ? '' : `answer ${code}` });
    }
    await db.query('begin');
    const ids: Record<string, string> = {};
    for (const code of Object.keys(expected)) ids[code] = await enqueue('POST', `${receiver.url}/status/${code}`, { body: { code } });
    await db.query('commit');
    const before = receiver.to('/ok').length;
    for (const [code, status] of Object.entries(expected)) {
      const d = await final(ids[code]);
      expect({ code, status: d.status, http: d.last_http_status }).toEqual({ code, status, http: Number(code) });
    }
    // redirects are not followed
    expect(receiver.to('/ok').length).toBe(before);
    const redirect = await final(ids['301']);
    expect(redirect.last_error).toMatch(/redirects are not followed/);
    // Retry-After travels with the attempt event for the retry ladder
    const events = (await readTopic(svc, svc.ctx.topics.events)).map((m) => decodeEvent(m.headers, m.value));
    const tooMany = events.find((e) => e?.type === 'DeliveryAttempted' && e.data.message_id === ids['429']);
    expect(tooMany?.data).toMatchObject({ outcome: 'failed', http_status: 429, retry_after_ms: 120_000 });
  });

  it('records a Retry-After no event could carry as a year: the attempt still ends and its offset moves on', async () => {
    // a receiver may answer anything; until 2026-11-27 this one made the attempt's event fail to
    // encode (an Avro long) on every try: no outcome, and the partition's offsets held for good
    receiver.answer('/ask-forever', { status: 503, headers: { 'retry-after': '99999999999999999999' }, body: 'later' });
    const id = await enqueue('POST', `${receiver.url}/ask-forever`, { body: { n: 1 } });
    expect(await final(id)).toMatchObject({ status: 'failed', last_http_status: 503 });
    const events = (await readTopic(svc, svc.ctx.topics.events)).map((m) => decodeEvent(m.headers, m.value));
    const attempt = events.find((e) => e?.type === 'DeliveryAttempted' && e.data.message_id === id);
    expect(attempt?.data).toMatchObject({ outcome: 'failed', http_status: 503, retry_after_ms: 366 * 86_400_000 });
  });

  it('records an outcome whose event holds a value no field can carry (a cause not closed yet) with that field null, logged, and moves on', async () => {
    receiver.answer('/unbounded', { status: 503, headers: { 'retry-after': UNBOUNDED }, body: 'later' });
    const id = await enqueue('POST', `${receiver.url}/unbounded`, { body: { n: 2 } });
    // without the net this never ends: the event fails to encode on every try
    expect(await final(id)).toMatchObject({ status: 'failed', last_http_status: 503 });
    const events = (await readTopic(svc, svc.ctx.topics.events)).map((m) => decodeEvent(m.headers, m.value));
    const attempt = events.find((e) => e?.type === 'DeliveryAttempted' && e.data.message_id === id);
    expect(attempt?.data).toMatchObject({ outcome: 'failed', http_status: 503, retry_after_ms: null });
    const line = logs.map((l) => JSON.parse(l)).find((l) => l.message === id && l.fields);
    expect(line).toMatchObject({ level: 50, event: 'DeliveryAttempted', project: project.ref, fields: ['retry_after_ms'] });
    await committedToEnd(svc, svc.ctx.groups.dispatcher, svc.ctx.topics.outbox);
  });

  it('fails a timeout and a refused connection', async () => {
    receiver.answer('/too-slow', { hang: true });
    const timeout = await enqueue('GET', `${receiver.url}/too-slow`, { timeoutMs: 300 });
    const closedPort = await freePort();
    const refused = await enqueue('GET', `http://127.0.0.2:${closedPort}/nobody-home`);
    expect(await final(timeout)).toMatchObject({ status: 'failed', last_error: 'timeout after 300 ms' });
    expect((await final(refused)).last_error).toMatch(/ECONNREFUSED/);
  });

  it('bounds the whole exchange: a body that trickles in, each chunk well within the timeout, fails as a timeout', async () => {
    // headers at once, then a byte every 50 ms for 3 s: neither undici's headers timeout nor its
    // body timeout (both per wait) ever fires; only the attempt's own bound over the exchange does
    const port = await freePort();
    const trickle = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let n = 0;
      const t = setInterval(() => (++n > 60 ? (clearInterval(t), res.end('.')) : res.write('.')), 50);
      res.on('close', () => clearInterval(t));
    });
    await new Promise<void>((r) => trickle.listen(port, '127.0.0.2', r));
    try {
      const id = await enqueue('GET', `http://127.0.0.2:${port}/trickle`, { timeoutMs: 400 });
      const d = await final(id);
      expect(d).toMatchObject({ status: 'failed', last_error: 'timeout after 400 ms' });
      expect(d.attempt_history[0].duration_ms).toBeLessThan(3000); // cut off, not read to the end
    } finally {
      trickle.closeAllConnections();
      await new Promise((r) => trickle.close(r));
    }
  });

  it('keeps a response body up to RESPONSE_BODY_LIMIT and stops reading there: an endless body does not hold the attempt', async () => {
    // 200, then 'é' (two bytes) after one byte, so the limit (4096, even) falls inside a character,
    // and then more for ever: the attempt is delivered, its body cut at the limit, the split
    // character dropped
    const port = await freePort();
    const endless = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.write('a');
      const t = setInterval(() => res.write('é'.repeat(1024)), 10);
      res.on('close', () => clearInterval(t));
    });
    await new Promise<void>((r) => endless.listen(port, '127.0.0.2', r));
    try {
      const id = await enqueue('GET', `http://127.0.0.2:${port}/endless`, { timeoutMs: 10_000 });
      const d = await final(id);
      expect(d).toMatchObject({ status: 'delivered', last_http_status: 200 });
      expect(svc.cfg.RESPONSE_BODY_LIMIT).toBe(4096);
      expect(d.last_response_body).toBe(`a${'é'.repeat(2047)}`); // 4095 bytes: the 4096th began a character
      expect(d.attempt_history[0].duration_ms).toBeLessThan(10_000);
    } finally {
      endless.closeAllConnections();
      await new Promise((r) => endless.close(r));
    }
  });

  it('refuses private targets (dead, no request), including a name that resolves to loopback', async () => {
    const local = await new Receiver().start('127.0.0.1');
    try {
      const targets = {
        literal: `http://127.0.0.1:${local.port}/x`,
        name: `http://localhost:${local.port}/x`,
        mapped: `http://[::ffff:127.0.0.1]:${local.port}/x`,
        private: 'http://10.1.2.3/x',
        metadata: 'http://169.254.169.254/latest/meta-data/',
      };
      const ids: Record<string, string> = {};
      for (const [k, url] of Object.entries(targets)) ids[k] = await enqueue('GET', url);
      for (const [k, id] of Object.entries(ids)) {
        const d = await final(id);
        expect({ k, status: d.status, error: d.last_error }).toEqual({ k, status: 'dead', error: expect.stringMatching(/^blocked target/) });
        // a name does not tell the project what the service's DNS answered for it (an internal
        // name's private address); an address written in the URL is the project's own
        if (k === 'name') expect(d.last_error).toBe('blocked target: localhost resolves to an address this service does not connect to (private, loopback, link-local or reserved)');
        if (k === 'literal') expect(d.last_error).toContain('127.0.0.1 is a loopback address');
      }
      expect(local.requests).toHaveLength(0);
    } finally {
      await local.stop();
    }
  });

  it('ends an invalid URL dead, also when it only becomes invalid after substitution', async () => {
    const spaced = await enqueue('GET', 'http://exa mple.com/');
    const viaSecret = await enqueue('GET', 'http://{{secret:BAD_URL}}/');
    expect(await final(spaced)).toMatchObject({ status: 'dead', last_error: 'invalid URL' });
    const d = await final(viaSecret);
    expect(d.status).toBe('dead');
    expect(d.target).toBe('http://{{secret:BAD_URL}}/');
  });

  it('keeps delivering to other targets while one target hangs', async () => {
    // A receiver of its own: the earlier tests' failures (timeouts, 5xx retried on the ladder) leave
    // the shared receiver's endpoint window paused, and a paused window's one try hanging here would
    // hold its other messages for the try's timeout (docs/delivery.md, "Slow start").
    const receiver = new Receiver();
    await receiver.start('127.0.0.2');
    receiver.answer('/hang', { hang: true });
    const slow = await enqueue('POST', `${receiver.url}/hang`, { timeoutMs: 60_000 });
    await eventually(async () => receiver.hanging > 0, 30_000, 'the hanging request');
    await db.query('begin');
    const fast: string[] = [];
    for (let i = 0; i < 40; i++) fast.push(await enqueue('POST', `${receiver.url}/fast`, { body: { i } }));
    await db.query('commit');
    for (const id of fast) expect((await final(id)).status).toBe('delivered');
    // all of them went through while the slow one is still open, and shown as pending once it has
    // run for a moment (a fast attempt's outcome is its only event: src/delivery/pipeline.ts)
    expect(receiver.to('/hang')).toHaveLength(1);
    await eventually(async () => (await api(`/${slow}`)).body.status === 'pending', 30_000, 'the slow delivery shown as pending');
    expect(receiver.to('/hang')).toHaveLength(1);
    receiver.release(200);
    expect((await final(slow)).status).toBe('delivered');
    await receiver.stop();
  });

  it('lists deliveries newest first with cursor pagination and filters, owner only', async () => {
    // A receiver of its own too: the shared one's endpoint has nine faults from the tests above, so
    // one more (a test added above) could open its circuit once their successes leave its window,
    // and hold these requests for its 30 s cool-down.
    const receiver = new Receiver();
    await receiver.start('127.0.0.2');
    const ids: string[] = [];
    try {
      await db.query('begin');
      for (let i = 0; i < 5; i++) ids.push(await enqueue('GET', `${receiver.url}/list/${i}`));
      await db.query('commit');
      for (const id of ids) await final(id);
    } finally {
      await receiver.stop();
    }

    const seen: any[] = [];
    let cursor: string | null = null;
    do {
      const r: { status: number; body: any } = await api(`?kind=http&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.deliveries.length).toBeLessThanOrEqual(4);
      seen.push(...r.body.deliveries);
      cursor = r.body.next_cursor;
    } while (cursor);
    expect(new Set(seen.map((d) => d.id)).size).toBe(seen.length);
    for (const id of ids) expect(seen.map((d) => d.id)).toContain(id);
    const times = seen.map((d) => Date.parse(d.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    // enqueued in one transaction, in order: the last one is the newest
    const pos = ids.map((id) => seen.findIndex((d) => d.id === id));
    expect([...pos].sort((a, b) => b - a)).toEqual(pos);

    const dead = await api('?status=dead&limit=100');
    expect(dead.body.deliveries.length).toBeGreaterThan(0);
    expect(dead.body.deliveries.every((d: any) => d.status === 'dead')).toBe(true);
    expect((await api('?kind=webhook')).body.deliveries).toEqual([]);
    expect((await api('?status=bogus')).status).toBe(400);
    expect((await api('?cursor=nonsense')).body.code).toBe('validation_failed');
    expect((await api('?limit=0')).status).toBe(400);
    expect((await api('?extra=1')).status).toBe(400);
    expect((await api('/00000000-0000-4000-8000-000000000000')).body.code).toBe('delivery_not_found');

    const stranger = await svc.project('pro');
    const foreign = await svc.api(stranger.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox/deliveries/${ids[0]}`);
    expect(foreign).toMatchObject({ status: 404, body: { code: 'project_not_found' } });
    expect((await svc.api(null, 'GET', `/v1/projects/${project.ref}/outbox/deliveries`)).status).toBe(401);
  });

  it('rebuilds the projection from the events topic (npm run admin -- rebuild-deliveries)', async () => {
    const snapshot = async () =>
      (
        await svc.ctx.db.query(
          `select (select json_agg(d order by id)::text from deliveries d) || (select json_agg(a order by delivery_id, run, attempt)::text from delivery_attempts a) as s`,
        )
      ).rows[0].s as string;
    // the projection has caught up when it stops changing
    let before = await snapshot();
    await eventually(async () => {
      const now = await snapshot();
      const same = now === before;
      before = now;
      return same;
    });
    await svc.ctx.db.query('delete from delivery_attempts');
    await svc.ctx.db.query(`update deliveries set status = 'pending', attempts = 0`);
    const out = await runAdmin(svc, ['rebuild-deliveries']);
    expect(out.deliveries).toBeGreaterThan(10);
    expect(await snapshot()).toBe(before);
  });
});

