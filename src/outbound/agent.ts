// The connect-time half of the SSRF guard: an undici dispatcher that vets the address it is about to
// connect to. Checking a URL when it is saved is not enough, because DNS can answer differently at
// delivery time (DNS rebinding); so the name is resolved inside the connect step and the socket is
// opened to exactly the address that was vetted, never re-resolved.
import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { vetAddress, type AllowList } from './address.js';

export interface GuardedAgentOptions {
  /** Addresses admitted despite the deny policy; see makeAllowList. */
  allow: AllowList;
  /** Sockets per origin (undici default: unlimited). */
  connections?: number;
  /** Idle keep-alive time in ms before a pooled socket is closed (undici default: 4 s). */
  keepAliveTimeout?: number;
  /** Requests in flight per socket (undici default: 1). */
  pipelining?: number;
  /** Resolver, dns.lookup-compatible (the default); tests inject fixed answers through it. */
  lookup?: LookupFunction;
}

const BLOCKED_CODE = 'ERR_BLOCKED_TARGET';

/** The connection was refused because the target address is internal or otherwise not allowed. */
export class BlockedTargetError extends Error {
  readonly code = BLOCKED_CODE;

  constructor(
    readonly hostname: string,
    readonly address: string,
    readonly range: string,
  ) {
    super(`refused to connect to ${hostname}: ${address} is a ${range} address`);
    this.name = 'BlockedTargetError';
  }
}

/**
 * What a refused target is recorded as where the project sees it (a delivery's error, its attempt
 * history). A name is not followed by the address it resolved to: the service's DNS may know
 * internal names, and their private addresses are nothing a project should be able to map (found
 * by review, 2026-11-29: a webhook's test send to http://vm:6379/ answered "127.0.0.1 is a
 * loopback address"). An address written in the URL is the project's own, and kept.
 */
export function blockedTargetText(e: BlockedTargetError): string {
  const literal = net.isIP(e.hostname.replace(/^\[|\]$/g, '')) !== 0;
  return literal ? `blocked target: ${e.message}` : `blocked target: ${e.hostname} resolves to an address this service does not connect to (private, loopback, link-local or reserved)`;
}

/**
 * Finds the BlockedTargetError behind a failed request. undici's request()/stream() reject with the
 * connector's error itself, but fetch() wraps it in TypeError.cause, interceptors may wrap it again,
 * and happy-eyeballs failures arrive as AggregateError; so causes are walked. The `code` check
 * recognises errors from a second copy of this module (bundles, test runners), where instanceof fails.
 */
export function findBlockedTargetError(err: unknown): BlockedTargetError | undefined {
  const seen = new Set<unknown>();
  const pending: unknown[] = [err];
  while (pending.length > 0) {
    const e = pending.shift();
    if (typeof e !== 'object' || e === null || seen.has(e)) continue;
    seen.add(e);
    if (e instanceof BlockedTargetError) return e;
    const fields = e as { code?: unknown; address?: unknown; cause?: unknown };
    if (fields.code === BLOCKED_CODE && typeof fields.address === 'string') return e as BlockedTargetError;
    pending.push(fields.cause);
    if (e instanceof AggregateError) pending.push(...e.errors);
  }
  return undefined;
}

export function isBlockedTargetError(err: unknown): boolean {
  return findBlockedTargetError(err) !== undefined;
}

/**
 * An undici Agent (pooled, keep-alive, pipelining-capable; no redirect following) that only ever
 * connects to vetted addresses. TLS keeps the URL's hostname for SNI and certificate checks,
 * because only the TCP destination is pinned, not the name undici hands to tls.connect.
 */
export function createGuardedAgent(opts: GuardedAgentOptions): Dispatcher {
  const { allow, lookup = dns.lookup } = opts;
  // Vetting inside net.connect's lookup hook means the socket connects to exactly the addresses
  // that passed, and undici's connect timeout also bounds the DNS query.
  const connectVetted = buildConnector({ lookup: vettedLookup(lookup, allow) });

  const connect: buildConnector.connector = (options, callback) => {
    // net.connect never calls lookup for an IP literal, so literals are vetted here.
    if (net.isIP(options.hostname)) {
      const verdict = vetAddress(options.hostname, allow);
      if (!verdict.allowed) {
        const err = new BlockedTargetError(options.hostname, options.hostname, verdict.range);
        // Asynchronously, as a real connect failure would be: undici is mid-way through connect().
        queueMicrotask(() => callback(err, null));
        return;
      }
    }
    connectVetted(options, callback);
  };

  return new Agent({
    connect,
    connections: opts.connections,
    keepAliveTimeout: opts.keepAliveTimeout,
    pipelining: opts.pipelining,
  });
}

function vettedLookup(resolve: LookupFunction, allow: AllowList): LookupFunction {
  return (hostname, options, callback) => {
    // Every address is requested and vetted even when net wants one: a name with any internal
    // answer is refused outright rather than trimmed, since mixing public and internal answers is
    // exactly how rebinding probes look, and the outcome must not depend on answer order.
    resolve(hostname, { ...options, all: true }, (err, answer, family) => {
      if (err) return callback(err, []);
      const addresses: dns.LookupAddress[] =
        typeof answer === 'string' ? [{ address: answer, family: family ?? net.isIP(answer) }] : answer;
      if (addresses.length === 0) {
        return callback(Object.assign(new Error(`no addresses for ${hostname}`), { code: 'ENOTFOUND' }), []);
      }
      for (const { address } of addresses) {
        const verdict = vetAddress(address, allow);
        if (!verdict.allowed) return callback(new BlockedTargetError(hostname, address, verdict.range), []);
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
