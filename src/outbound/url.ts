// Creation-time check of a webhook URL, so an obviously internal target is refused when the customer
// registers it rather than failing every delivery later. It judges only what the URL itself says: a
// literal IP in any spelling, or a name that is internal by definition. Other names need DNS, whose
// answer can change before delivery, so the guarded dispatcher judges them at connect time.
import net from 'node:net';
import { vetAddress, type AllowList } from './address.js';

export type UrlCheck =
  | { ok: true; url: URL }
  | { ok: false; code: 'url_not_allowed' | 'invalid_url'; reason: string };

// Names that resolve to instance-metadata endpoints inside GCP and EC2 (via the VPC resolver).
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/**
 * Validates a delivery URL. On success `url` is the WHATWG-normalised form; store `url.href` so the
 * spelling that was checked is the spelling that is later requested.
 */
export function checkUrlLiteral(input: string, allow: AllowList): UrlCheck {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return invalid('not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return invalid(`scheme "${url.protocol}" is not allowed, use http or https`);
  }
  const host = normaliseHost(url.hostname);
  if (host === undefined) return invalid(`"${url.hostname}" is not a valid host`);

  if (net.isIP(host)) {
    const verdict = vetAddress(host, allow);
    return verdict.allowed ? { ok: true, url } : refused(`${url.hostname} is a ${verdict.range} address`);
  }
  // RFC 6761: localhost and *.localhost always mean the loopback interface, whatever DNS says, so
  // they are judged as loopback; the connect-time check still vets what they actually resolve to.
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return allow('127.0.0.1') || allow('::1') ? { ok: true, url } : refused(`${url.hostname} is a loopback name`);
  }
  if (METADATA_HOSTS.has(host)) return refused(`${url.hostname} is a cloud metadata endpoint`);
  return { ok: true, url };
}

/**
 * WHATWG URL already turns every IPv4 spelling libc accepts (2130706433, 0x7f.1, 0177.0.0.1, 127.1,
 * %31%32%37.0.0.1, full-width digits) into dotted decimal and compresses IPv6, but it strips only
 * one trailing dot before deciding a host is IPv4: "127.0.0.1.." survives as a "domain" that a
 * lenient resolver may still read as 127.0.0.1. Dropping all trailing dots and running the WHATWG
 * host parser again closes that gap and also canonicalises "localhost." style names.
 * Returns an unbracketed IP or a lower-case name, or undefined if the host cannot be a target.
 */
function normaliseHost(hostname: string): string | undefined {
  if (hostname.startsWith('[')) return hostname.slice(1, -1);
  const stripped = hostname.replace(/\.+$/, '');
  if (stripped === hostname) return hostname;
  try {
    return new URL(`http://${stripped}/`).hostname;
  } catch {
    // e.g. "1.2.3.4.5..": numeric-looking but not an address WHATWG accepts.
    return undefined;
  }
}

function invalid(reason: string): UrlCheck {
  return { ok: false, code: 'invalid_url', reason };
}

function refused(reason: string): UrlCheck {
  return { ok: false, code: 'url_not_allowed', reason };
}
