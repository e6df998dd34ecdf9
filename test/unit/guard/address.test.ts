import { describe, expect, it } from 'vitest';
import { classifyAddress, makeAllowList, vetAddress } from '../../../src/outbound/address.js';

describe('classifyAddress', () => {
  it.each([
    // RFC 1918
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.1', 'private'],
    // loopback
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    // link-local, CGNAT, multicast, broadcast, unspecified, reserved
    ['169.254.1.1', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['febf::1', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.254', 'carrierGradeNat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['fc00::1', 'uniqueLocal'],
    ['fdff:ffff::1', 'uniqueLocal'],
    // metadata endpoints are named even where a broader range would also refuse them
    ['169.254.169.254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['fd00:ec2:0:0:0:0:0:254', 'metadata'],
    // IPv6 forms that embed an IPv4 host are judged by that host
    ['::ffff:127.0.0.1', 'ipv4Mapped:loopback'],
    ['::ffff:7f00:1', 'ipv4Mapped:loopback'],
    ['::ffff:10.0.0.1', 'ipv4Mapped:private'],
    ['::ffff:169.254.169.254', 'ipv4Mapped:metadata'],
    ['0:0:0:0:0:ffff:c0a8:101', 'ipv4Mapped:private'],
    ['::ffff:0:7f00:1', 'rfc6145:loopback'],
    ['::127.0.0.1', 'ipv4Compatible:loopback'],
    ['::7f00:1', 'ipv4Compatible:loopback'],
    ['::a00:1', 'ipv4Compatible:private'],
    ['64:ff9b::127.0.0.1', 'rfc6052:loopback'],
    ['64:ff9b::a9fe:a9fe', 'rfc6052:metadata'],
    ['64:ff9b::c0a8:1', 'rfc6052:private'],
    ['64:ff9b:1::808:808', 'rfc6052'],
    ['2002:7f00:1::1', '6to4:loopback'],
    ['2002:a00:1::', '6to4:private'],
    ['2002:c0a8:101::1', '6to4:private'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['2001::1', 'teredo'],
    // not an address at all
    ['', 'invalid'],
    ['example.com', 'invalid'],
    ['1.2.3.4.5', 'invalid'],
    ['[::1]', 'invalid'],
  ])('refuses %s as %s', (ip, range) => {
    expect(classifyAddress(ip)).toEqual({ allowed: false, range });
  });

  it.each([
    ['8.8.8.8', 'unicast'],
    ['93.184.215.14', 'unicast'],
    ['172.32.0.1', 'unicast'],
    ['100.128.0.1', 'unicast'],
    ['2606:4700:4700::1111', 'unicast'],
    ['2a00:1450:4001:82b::200e', 'unicast'],
    ['::ffff:8.8.8.8', 'ipv4Mapped:unicast'],
    ['64:ff9b::8.8.8.8', 'rfc6052:unicast'],
    ['2002:808:808::1', '6to4:unicast'],
  ])('allows public %s (%s)', (ip, range) => {
    expect(classifyAddress(ip)).toEqual({ allowed: true, range });
  });
});

describe('makeAllowList', () => {
  it('admits addresses inside the listed ranges only', () => {
    const allow = makeAllowList(['127.0.0.0/8', '::1/128', '10.1.2.3']);
    expect(allow('127.0.0.1')).toBe(true);
    expect(allow('127.9.9.9')).toBe(true);
    expect(allow('::1')).toBe(true);
    expect(allow('10.1.2.3')).toBe(true);
    expect(allow('10.1.2.4')).toBe(false);
    expect(allow('192.168.0.1')).toBe(false);
    expect(allow('::2')).toBe(false);
    expect(allow('not-an-ip')).toBe(false);
  });

  it('treats an IPv4-mapped address as its IPv4 host, but not NAT64 or 6to4 embeddings', () => {
    const allow = makeAllowList(['127.0.0.0/8']);
    expect(allow('::ffff:127.0.0.1')).toBe(true);
    expect(allow('::ffff:7f00:1')).toBe(true);
    expect(allow('64:ff9b::7f00:1')).toBe(false);
    expect(allow('2002:7f00:1::')).toBe(false);
    expect(allow('::127.0.0.1')).toBe(false); // IPv4-compatible, not mapped
    expect(allow('::1')).toBe(false);
  });

  it('admits nothing when empty', () => {
    const allow = makeAllowList([]);
    expect(allow('127.0.0.1')).toBe(false);
    expect(allow('8.8.8.8')).toBe(false);
  });

  it('rejects malformed entries instead of ignoring them', () => {
    expect(() => makeAllowList(['127.0.0.0/8', 'localhost'])).toThrow(/"localhost"/);
    expect(() => makeAllowList(['10.0.0.0/33'])).toThrow(/not an IP address or CIDR/);
  });
});

describe('vetAddress', () => {
  it('lets the allow-list override the deny policy, and only it', () => {
    const allow = makeAllowList(['127.0.0.0/8', '169.254.169.254']);
    expect(vetAddress('127.0.0.1', allow)).toEqual({ allowed: true, range: 'loopback' });
    expect(vetAddress('169.254.169.254', allow)).toEqual({ allowed: true, range: 'metadata' });
    expect(vetAddress('::1', allow)).toEqual({ allowed: false, range: 'loopback' });
    expect(vetAddress('8.8.8.8', allow)).toEqual({ allowed: true, range: 'unicast' });
  });
});
