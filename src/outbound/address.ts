// Which IP addresses outbound deliveries may reach. Webhook URLs are chosen by customers, so without
// this check a customer could make our workers call internal services, cloud metadata endpoints or
// the loopback interface on their behalf (SSRF). The policy is deny-by-default: only globally
// routable unicast is allowed, everything special is refused, and an operator-supplied allow-list is
// the single, explicit way around it (e.g. 127.0.0.0/8 in dev and tests).
import ipaddr from 'ipaddr.js';

export interface AddressVerdict {
  allowed: boolean;
  /** ipaddr.js range name ('unicast' when public), or 'metadata' / 'teredo' / 'invalid' / 'reserved'. */
  range: string;
}

export type AllowList = (ip: string) => boolean;

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

// Cloud instance-metadata endpoints hand out credentials: AWS/GCP/Azure IMDS, AWS ECS task
// credentials, Alibaba, Azure wireserver, AWS IMDS over IPv6. Most already fall in a blocked range,
// but naming them makes refusals obvious in logs; 168.63.129.16 is public space and would otherwise
// be allowed.
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', '168.63.129.16', 'fd00:ec2::254']);

// IANA global unicast. ipaddr.js calls anything it has no name for 'unicast', including unassigned
// space such as 4000::/3 and the IPv4-compatible ::a.b.c.d block, so IPv6 needs this extra fence.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/** Classifies an address (any form ipaddr.js parses, as getaddrinfo would) against the deny policy. */
export function classifyAddress(ip: string): AddressVerdict {
  const addr = parse(ip);
  return addr ? classify(addr) : { allowed: false, range: 'invalid' };
}

/** The decision used everywhere: the allow-list wins, otherwise the deny policy. */
export function vetAddress(ip: string, allow: AllowList): AddressVerdict {
  const verdict = classifyAddress(ip);
  return allow(ip) ? { allowed: true, range: verdict.range } : verdict;
}

/**
 * Builds an allow-list from CIDRs (or bare addresses). Throws on a malformed entry so a typo in
 * configuration stops the process instead of silently allowing nothing, or everything.
 */
export function makeAllowList(cidrs: string[]): AllowList {
  const ranges = cidrs.map((entry) => {
    const text = entry.trim();
    try {
      if (text.includes('/')) return ipaddr.parseCIDR(text);
      const addr = ipaddr.parse(text);
      return [addr, addr.kind() === 'ipv4' ? 32 : 128] as [Addr, number];
    } catch {
      throw new Error(`allow-list entry is not an IP address or CIDR: "${entry}"`);
    }
  });
  return (ip) => {
    const addr = parse(ip);
    if (!addr) return false;
    // An IPv4-mapped address is the same IPv4 host on the wire, so 127.0.0.0/8 must also admit
    // ::ffff:127.0.0.1. Other embeddings (NAT64, 6to4) route via a translator and are not unwrapped.
    const candidates: Addr[] = [addr];
    if (addr instanceof ipaddr.IPv6 && addr.isIPv4MappedAddress()) candidates.push(addr.toIPv4Address());
    return candidates.some((c) => ranges.some(([net, bits]) => c.kind() === net.kind() && c.match(net, bits)));
  };
}

// ipaddr.js reads the deprecated IPv4-compatible "::a.b.c.d" as IPv4-mapped "::ffff:a.b.c.d", and
// inet_ntop prints an AAAA answer of ::7f00:1 in exactly that form. Undone so that the address
// judged, and matched against the allow-list, is the one a socket would actually reach.
const IPV4_COMPATIBLE_DOTTED = /^::\d+\.\d+\.\d+\.\d+(%.*)?$/;

function parse(ip: string): Addr | undefined {
  try {
    const addr = ipaddr.parse(ip);
    if (addr instanceof ipaddr.IPv6 && IPV4_COMPATIBLE_DOTTED.test(ip)) addr.parts[5] = 0;
    return addr;
  } catch {
    return undefined;
  }
}

function classify(addr: Addr): AddressVerdict {
  if (METADATA.has(addr.toString())) return { allowed: false, range: 'metadata' };
  return addr instanceof ipaddr.IPv4 ? classifyV4(addr) : classifyV6(addr);
}

function classifyV4(addr: ipaddr.IPv4): AddressVerdict {
  const range = addr.range();
  return { allowed: range === 'unicast', range };
}

function classifyV6(addr: ipaddr.IPv6): AddressVerdict {
  const range = addr.range();
  const p = addr.parts;
  switch (range) {
    // The kernel (or a translator) delivers these to the embedded IPv4 host, so that host decides.
    case 'ipv4Mapped':
    case 'rfc6145':
      return embedded(range, p[6], p[7]);
    case 'rfc6052':
      // 64:ff9b:1::/48 is local-use NAT64 with operator-defined layout: refuse rather than guess.
      return addr.match(NAT64_WELL_KNOWN) ? embedded(range, p[6], p[7]) : { allowed: false, range };
    case '6to4':
      return embedded(range, p[1], p[2]);
    case 'unicast':
      // Deprecated IPv4-compatible ::a.b.c.d (:: and ::1 have their own names): older stacks
      // tunnel it to a.b.c.d, so it is judged like the other embeddings.
      if (p.slice(0, 6).every((x) => x === 0)) return embedded('ipv4Compatible', p[6], p[7]);
      return addr.match(GLOBAL_UNICAST_V6) ? { allowed: true, range } : { allowed: false, range: 'reserved' };
    default:
      // Loopback, unspecified, Teredo, ULA, link-local, multicast, documentation, ORCHID, ...
      return { allowed: false, range };
  }
}

function embedded(kind: string, hi: number, lo: number): AddressVerdict {
  const v4 = new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const inner = classify(v4);
  return { allowed: inner.allowed, range: `${kind}:${inner.range}` };
}
