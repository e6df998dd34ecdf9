import { describe, expect, it } from 'vitest';
import { makeAllowList } from '../../../src/outbound/address.js';
import { checkUrlLiteral } from '../../../src/outbound/url.js';

const none = makeAllowList([]);
const dev = makeAllowList(['127.0.0.0/8', '::1/128', '10.0.0.0/8']);
const v4LoopbackOnly = makeAllowList(['127.0.0.0/8']);

// Every spelling of an internal address that a browser, WHATWG URL or libc accepts.
const literals: Array<[spelling: string, means: string]> = [
  ['127.0.0.1', '127.0.0.1'],
  ['2130706433', '127.0.0.1'],
  ['0x7f000001', '127.0.0.1'],
  ['0X7F000001', '127.0.0.1'],
  ['0x7f.0.0.1', '127.0.0.1'],
  ['0x7f.0x0.0x0.0x1', '127.0.0.1'],
  ['0177.0.0.1', '127.0.0.1'],
  ['0177.0.0.01', '127.0.0.1'],
  ['017700000001', '127.0.0.1'],
  ['127.1', '127.0.0.1'],
  ['127.0.1', '127.0.0.1'],
  ['0x7f.1', '127.0.0.1'],
  ['127.000.000.001', '127.0.0.1'],
  ['127.0.0.0x1', '127.0.0.1'],
  ['127.0.0.1.', '127.0.0.1'],
  ['127.0.0.1..', '127.0.0.1'],
  ['0x7f.1...', '127.0.0.1'],
  ['%31%32%37.0.0.1', '127.0.0.1'],
  ['１２７.０.０.１', '127.0.0.1'],
  ['10.1', '10.0.0.1'],
  ['167772161', '10.0.0.1'],
  ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
  ['[::ffff:7f00:1]', '::ffff:7f00:1'],
  ['[0:0:0:0:0:ffff:127.0.0.1]', '::ffff:7f00:1'],
  ['[::FFFF:7F00:0001]', '::ffff:7f00:1'],
  ['[::1]', '::1'],
  ['[0000:0000:0000:0000:0000:0000:0000:0001]', '::1'],
];

describe('checkUrlLiteral: literal IP spellings', () => {
  it.each(literals)('refuses http://%s/ (%s) with an empty allow-list', (spelling) => {
    for (const scheme of ['http', 'https']) {
      const r = checkUrlLiteral(`${scheme}://${spelling}:8080/hook?x=1`, none);
      expect(r).toMatchObject({ ok: false, code: 'url_not_allowed' });
    }
  });

  it.each(literals)('allows http://%s/ (%s) when the allow-list covers it', (spelling, means) => {
    expect(checkUrlLiteral(`http://${spelling}:8080/hook`, dev).ok).toBe(true);
    // An allow-list of exactly that one address proves which address the spelling was read as.
    expect(checkUrlLiteral(`http://${spelling}:8080/hook`, makeAllowList([means])).ok).toBe(true);
  });

  it('hands back the normalised URL so the checked spelling is the stored one', () => {
    const r = checkUrlLiteral('HTTP://0x7f.1:8080/a/../hook', dev);
    expect(r.ok && r.url.href).toBe('http://127.0.0.1:8080/hook');
  });

  it('does not let an IPv4 allow-list admit IPv6 loopback', () => {
    expect(checkUrlLiteral('http://[::1]/', v4LoopbackOnly).ok).toBe(false);
    expect(checkUrlLiteral('http://[::ffff:127.0.0.1]/', v4LoopbackOnly).ok).toBe(true);
  });

  it.each([
    ['http://169.254.169.254/latest/meta-data/', 'metadata'],
    ['http://0xa9fea9fe/', 'metadata'],
    ['http://[fd00:ec2::254]/', 'metadata'],
    ['http://100.100.100.200/', 'metadata'],
    ['http://192.168.0.1/', 'private'],
    ['http://172.16.0.1/', 'private'],
    ['http://100.64.0.1/', 'carrierGradeNat'],
    ['http://0/', 'unspecified'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    ['http://0xffffffff/', 'broadcast'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://[fe80::1]/', 'linkLocal'],
    ['http://[fc00::1]/', 'uniqueLocal'],
    ['http://[64:ff9b::127.0.0.1]/', 'rfc6052:loopback'],
    ['http://[2002:7f00:1::1]/', '6to4:loopback'],
    ['http://[2001::1]/', 'teredo'],
    ['http://[::127.0.0.1]/', 'ipv4Compatible:loopback'],
  ])('refuses %s as %s', (url, range) => {
    const r = checkUrlLiteral(url, none);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(`a ${range} address`);
  });

  it('reads a leading zero as octal, as libc does, so 0127.0.0.1 is the public 87.0.0.1', () => {
    const r = checkUrlLiteral('http://0127.0.0.1/', none);
    expect(r.ok && r.url.hostname).toBe('87.0.0.1');
  });
});

describe('checkUrlLiteral: names', () => {
  it.each(['localhost', 'LOCALHOST', 'localhost.', 'localhost..', 'api.localhost', 'a.b.LOCALHOST.'])(
    'refuses loopback name %s unless loopback is allowed',
    (host) => {
      expect(checkUrlLiteral(`http://${host}:3000/`, none)).toMatchObject({ ok: false, code: 'url_not_allowed' });
      expect(checkUrlLiteral(`http://${host}:3000/`, v4LoopbackOnly).ok).toBe(true);
    },
  );

  it.each(['metadata.google.internal', 'METADATA.GOOGLE.INTERNAL.', 'metadata.goog', 'instance-data'])(
    'refuses metadata name %s even with an allow-list',
    (host) => {
      expect(checkUrlLiteral(`http://${host}/computeMetadata/v1/`, dev)).toMatchObject({
        ok: false,
        code: 'url_not_allowed',
      });
    },
  );

  it.each([
    'https://example.com/hooks',
    'https://hooks.example.com:8443/a?b=c',
    'http://127.0.0.1.nip.io/', // a name: its address is judged at connect time
    'http://localhost.example.com/',
    'https://xn--bcher-kva.example/',
  ])('passes ordinary name %s to the connect-time check', (url) => {
    expect(checkUrlLiteral(url, none).ok).toBe(true);
  });
});

describe('checkUrlLiteral: malformed input', () => {
  it.each([
    'not a url',
    '/relative/path',
    'http://',
    'http://./',
    'http://1.2.3.4.5/',
    'http://1.2.3.4.5../',
    'http://4294967296/',
    'http://127.0.0.09/',
    'http://[::1%25eth0]/',
    'ftp://example.com/',
    'file:///etc/passwd',
    'gopher://127.0.0.1:6379/_INFO',
    'javascript:alert(1)',
  ])('refuses %s as invalid_url', (url) => {
    expect(checkUrlLiteral(url, dev)).toMatchObject({ ok: false, code: 'invalid_url' });
  });
});
