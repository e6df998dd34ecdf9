import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { request, type Dispatcher } from 'undici';
import { makeAllowList } from '../../../src/outbound/address.js';
import {
  BlockedTargetError,
  createGuardedAgent,
  findBlockedTargetError,
  isBlockedTargetError,
} from '../../../src/outbound/agent.js';

describe('isBlockedTargetError', () => {
  const blocked = new BlockedTargetError('hooks.example.com', '10.0.0.1', 'private');

  it('recognises the error itself and carries address and range', () => {
    expect(isBlockedTargetError(blocked)).toBe(true);
    expect(findBlockedTargetError(blocked)).toMatchObject({ hostname: 'hooks.example.com', address: '10.0.0.1', range: 'private' });
    expect(blocked.message).toBe('refused to connect to hooks.example.com: 10.0.0.1 is a private address');
  });

  it('finds it behind cause chains (fetch) and inside AggregateError (happy eyeballs)', () => {
    const fetchStyle = new TypeError('fetch failed', { cause: blocked });
    expect(findBlockedTargetError(new Error('retry gave up', { cause: fetchStyle }))).toBe(blocked);
    expect(findBlockedTargetError(new AggregateError([new Error('ECONNREFUSED'), blocked]))).toBe(blocked);
  });

  it('recognises one thrown by another copy of the module by its code', () => {
    const foreign = Object.assign(new Error('x'), { code: 'ERR_BLOCKED_TARGET', address: '127.0.0.1', range: 'loopback' });
    expect(isBlockedTargetError(foreign)).toBe(true);
  });

  it('says no to everything else, including cyclic causes', () => {
    const cyclic: Error & { cause?: unknown } = new Error('a');
    cyclic.cause = new Error('b', { cause: cyclic });
    for (const e of [cyclic, new Error('ECONNREFUSED'), { code: 'ERR_BLOCKED_TARGET' }, 'string', null, undefined]) {
      expect(isBlockedTargetError(e)).toBe(false);
    }
  });
});

describe('createGuardedAgent: refusal before any socket is opened', () => {
  let dispatcher: Dispatcher | undefined;
  afterEach(async () => {
    await dispatcher?.close();
    dispatcher = undefined;
  });

  function answering(answer: LookupAddress[] | Error): LookupFunction & { calls: string[] } {
    const calls: string[] = [];
    const fn = ((hostname, options, callback) => {
      calls.push(hostname);
      expect(options.all).toBe(true);
      if (answer instanceof Error) callback(answer, []);
      else callback(null, answer);
    }) as LookupFunction & { calls: string[] };
    fn.calls = calls;
    return fn;
  }

  async function failure(url: string, allow: string[], lookup?: LookupFunction): Promise<unknown> {
    dispatcher = createGuardedAgent({ allow: makeAllowList(allow), lookup });
    return request(url, { dispatcher }).then(
      () => expect.fail(`request to ${url} succeeded`),
      (err: unknown) => err,
    );
  }

  it.each([
    ['http://127.0.0.1:9/', '127.0.0.1', 'loopback'],
    ['http://[::1]:9/', '::1', 'loopback'],
    ['http://[::ffff:10.0.0.1]:9/', '::ffff:a00:1', 'ipv4Mapped:private'],
    ['https://169.254.169.254/', '169.254.169.254', 'metadata'],
    ['http://2130706433:9/', '127.0.0.1', 'loopback'],
  ])('refuses literal %s', async (url, address, range) => {
    const err = await failure(url, []);
    expect(err).toBeInstanceOf(BlockedTargetError);
    expect(err).toMatchObject({ address, range });
  });

  it('refuses a name when any of its addresses is internal, whatever the order', async () => {
    const lookup = answering([
      { address: '93.184.215.14', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ]);
    const err = await failure('https://rebind.example.com/', [], lookup);
    expect(findBlockedTargetError(err)).toMatchObject({ hostname: 'rebind.example.com', address: '10.1.2.3', range: 'private' });
    expect(lookup.calls).toEqual(['rebind.example.com']);
  });

  it('judges IPv6 answers, including mapped IPv4', async () => {
    const lookup = answering([{ address: '::ffff:169.254.169.254', family: 6 }]);
    const err = await failure('http://meta.example.com/', ['127.0.0.0/8'], lookup);
    expect(findBlockedTargetError(err)).toMatchObject({ range: 'ipv4Mapped:metadata' });
  });

  it('passes resolver failures through untouched', async () => {
    const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND nope.example'), { code: 'ENOTFOUND' });
    const err = await failure('http://nope.example/', [], answering(notFound));
    expect(err).toBe(notFound);
    expect(isBlockedTargetError(err)).toBe(false);
  });

  it('treats an empty answer as not found rather than connecting anywhere', async () => {
    const err = await failure('http://empty.example/', [], answering([]));
    expect(err).toMatchObject({ code: 'ENOTFOUND' });
  });
});
