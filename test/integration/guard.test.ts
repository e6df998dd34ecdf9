// End-to-end behaviour of the guarded dispatcher against a real server on 127.0.0.1: internal
// targets are refused before a single byte reaches them, and an explicit allow-list is the one way
// through. Needs no stack; it only uses the loopback interface.
import http from 'node:http';
import net, { type LookupFunction } from 'node:net';
import tls from 'node:tls';
import { once } from 'node:events';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fetch, request, type Dispatcher } from 'undici';
import { makeAllowList } from '../../src/outbound/address.js';
import {
  BlockedTargetError,
  createGuardedAgent,
  findBlockedTargetError,
  isBlockedTargetError,
  type GuardedAgentOptions,
} from '../../src/outbound/agent.js';

let server: http.Server;
let port: number;
const seen = { connections: 0, requests: [] as Array<{ url: string; host: string }> };

// A made-up name that real DNS cannot answer, so reaching the server proves the vetted answer from
// our lookup was used for the connection.
const HOOK_HOST = 'hooks.example.test';
const toLoopback: LookupFunction = (hostname, options, callback) => {
  if (hostname !== HOOK_HOST) return callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
};

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.requests.push({ url: req.url!, host: req.headers.host! });
    if (req.url === '/redirect') {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/secret` }).end();
    } else {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    }
  });
  server.on('connection', () => seen.connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

let dispatcher: Dispatcher | undefined;
beforeEach(() => {
  seen.connections = 0;
  seen.requests = [];
});
afterEach(async () => {
  await dispatcher?.close();
  dispatcher = undefined;
});

async function useDispatcher(opts: GuardedAgentOptions): Promise<Dispatcher> {
  await dispatcher?.close();
  dispatcher = createGuardedAgent(opts);
  return dispatcher;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('request succeeded'),
    (err: unknown) => err,
  );
}

describe('with an empty allow-list', () => {
  beforeEach(async () => {
    await useDispatcher({ allow: makeAllowList([]), lookup: toLoopback });
  });

  it('refuses http://127.0.0.1:port and the server sees nothing', async () => {
    const err = await rejection(request(`http://127.0.0.1:${port}/`, { dispatcher }));
    expect(err).toBeInstanceOf(BlockedTargetError);
    expect(err).toMatchObject({ address: '127.0.0.1', range: 'loopback' });
    expect(seen.connections).toBe(0);
    expect(seen.requests).toEqual([]);
  });

  it('refuses a name that resolves to 127.0.0.1', async () => {
    const err = await rejection(request(`http://${HOOK_HOST}:${port}/`, { dispatcher }));
    expect(findBlockedTargetError(err)).toMatchObject({ hostname: HOOK_HOST, address: '127.0.0.1', range: 'loopback' });
    expect(seen.connections).toBe(0);
  });

  it('refuses localhost through the system resolver', async () => {
    const system = createGuardedAgent({ allow: makeAllowList([]) });
    try {
      const err = await rejection(request(`http://localhost:${port}/`, { dispatcher: system }));
      expect(findBlockedTargetError(err)).toMatchObject({ hostname: 'localhost', range: 'loopback' });
      expect(seen.connections).toBe(0);
    } finally {
      await system.close();
    }
  });

  it('is recognisable through fetch(), which wraps the connect error', async () => {
    const err = await rejection(fetch(`http://${HOOK_HOST}:${port}/`, { dispatcher }));
    expect(err).toBeInstanceOf(TypeError);
    expect(isBlockedTargetError(err)).toBe(true);
    expect(seen.connections).toBe(0);
  });

  it('keeps refusing on later requests to the same origin', async () => {
    for (let i = 0; i < 3; i++) {
      expect(isBlockedTargetError(await rejection(request(`http://127.0.0.1:${port}/`, { dispatcher })))).toBe(true);
    }
    expect(seen.connections).toBe(0);
  });
});

describe('with allow-list 127.0.0.0/8', () => {
  beforeEach(async () => {
    await useDispatcher({ allow: makeAllowList(['127.0.0.0/8']), lookup: toLoopback });
  });

  it('reaches http://127.0.0.1:port', async () => {
    const res = await request(`http://127.0.0.1:${port}/hook`, { dispatcher, method: 'POST', body: '{}' });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    expect(seen.requests).toEqual([{ url: '/hook', host: `127.0.0.1:${port}` }]);
  });

  it('connects a name to the vetted address while keeping the name in Host', async () => {
    const res = await request(`http://${HOOK_HOST}:${port}/named`, { dispatcher });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    expect(seen.requests).toEqual([{ url: '/named', host: `${HOOK_HOST}:${port}` }]);
  });

  it('also works when net asks the resolver for a single address', async () => {
    const before = net.getDefaultAutoSelectFamily();
    net.setDefaultAutoSelectFamily(false);
    try {
      const res = await request(`http://${HOOK_HOST}:${port}/single`, { dispatcher });
      expect(res.statusCode).toBe(200);
      await res.body.dump();
    } finally {
      net.setDefaultAutoSelectFamily(before);
    }
  });

  it('returns a 302 as-is instead of following it', async () => {
    const res = await request(`http://127.0.0.1:${port}/redirect`, { dispatcher });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(`http://127.0.0.1:${port}/secret`);
    await res.body.dump();
    expect(seen.requests.map((r) => r.url)).toEqual(['/redirect']);
  });

  it('reuses one kept-alive socket for consecutive requests', async () => {
    // connections: 1 because an unbounded pool may open a second socket when the next request is
    // queued a moment before undici marks the first one idle; that is undici's choice, not ours.
    await useDispatcher({ allow: makeAllowList(['127.0.0.0/8']), lookup: toLoopback, connections: 1 });
    for (let i = 0; i < 5; i++) {
      const res = await request(`http://${HOOK_HOST}:${port}/n${i}`, { dispatcher });
      expect(res.statusCode).toBe(200);
      await res.body.text();
    }
    expect(seen.requests).toHaveLength(5);
    expect(seen.connections).toBe(1);
  });

  it('pools and pipelines concurrent requests over a bounded set of sockets', async () => {
    await useDispatcher({
      allow: makeAllowList(['127.0.0.0/8']),
      lookup: toLoopback,
      connections: 2,
      pipelining: 4,
    });
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await request(`http://${HOOK_HOST}:${port}/p${i}`, { dispatcher });
        await res.body.text();
        return res.statusCode;
      }),
    );
    expect(statuses).toEqual(Array(20).fill(200));
    expect(seen.connections).toBeLessThanOrEqual(2);
  });

  it('still refuses addresses outside the allow-list', async () => {
    const err = await rejection(request(`http://[::1]:${port}/`, { dispatcher }));
    expect(err).toMatchObject({ address: '::1', range: 'loopback' });
    expect(seen.connections).toBe(0);
  });
});

describe('TLS', () => {
  it('sends the URL hostname as SNI although the socket goes to the vetted address', async () => {
    // No certificate is needed: SNI arrives in the ClientHello, which is all this test inspects.
    const sni: string[] = [];
    const tlsServer = tls.createServer({
      SNICallback: (servername, cb) => {
        sni.push(servername);
        cb(new Error('test server has no certificate'));
      },
    });
    tlsServer.listen(0, '127.0.0.1');
    await once(tlsServer, 'listening');
    const tlsPort = (tlsServer.address() as net.AddressInfo).port;
    await useDispatcher({ allow: makeAllowList(['127.0.0.0/8']), lookup: toLoopback });
    try {
      const err = await rejection(request(`https://${HOOK_HOST}:${tlsPort}/`, { dispatcher }));
      expect(isBlockedTargetError(err)).toBe(false);
      expect(sni).toEqual([HOOK_HOST]);
    } finally {
      tlsServer.close();
    }
  });
});
