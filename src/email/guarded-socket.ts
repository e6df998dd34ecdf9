// A project's SMTP host is chosen by the customer, so connecting to it is the same SSRF risk as a
// webhook URL: without this check a project could make the dispatcher talk SMTP to internal
// services or metadata endpoints. The name is resolved and every answer vetted inside the connect
// step, and the socket goes to exactly the vetted address (no second lookup to rebind). nodemailer
// then speaks SMTP over this socket, upgrading it to TLS itself (implicit TLS or STARTTLS) with the
// configured host name for SNI and certificate checks.
import dns from 'node:dns';
import net, { type LookupFunction } from 'node:net';
import { vetAddress, type AllowList, BlockedTargetError } from '../outbound/index.js';

type SocketCallback = (err: Error | null, socketOptions?: { connection: net.Socket }) => void;

/** A nodemailer `getSocket` option that connects only to vetted addresses. */
export function guardedSocket(allow: AllowList, timeoutMs: number) {
  return (options: { host?: string; port?: number }, callback: SocketCallback): void => {
    const host = options.host ?? 'localhost';
    if (net.isIP(host)) {
      const verdict = vetAddress(host, allow);
      if (!verdict.allowed) return void queueMicrotask(() => callback(new BlockedTargetError(host, host, verdict.range)));
    }
    const socket = net.connect({ host, port: options.port ?? 587, lookup: vettedLookup(allow) });
    let settled = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeListener('error', settle);
      if (err) {
        socket.destroy();
        callback(err);
      } else callback(null, { connection: socket });
    };
    const timer = setTimeout(() => settle(Object.assign(new Error(`connection to ${host} timed out`), { code: 'ETIMEDOUT' })), timeoutMs);
    socket.once('connect', () => {
      watchBytes(socket, host);
      settle(null);
    });
    socket.once('error', settle);
  };
}

/**
 * What an SMTP server may send over one connection. Its replies are a few lines a message (and a
 * pooled connection carries at most nodemailer's 100 messages), so this is far above any real
 * session. nodemailer joins a reply's lines by splitting all it has so far on every chunk: a server
 * sending one endless line made that quadratic and stalled the event loop for 10-17 s at a time
 * (found by review, 2026-11-29).
 */
export const SMTP_MAX_READ_BYTES = 2 * 1024 * 1024;
const WATCH_MS = 100;

/** Destroys the socket once the server has sent more than SMTP_MAX_READ_BYTES (TLS included: the raw socket's count). */
function watchBytes(socket: net.Socket, host: string): void {
  const watch = setInterval(() => {
    if (socket.destroyed) clearInterval(watch);
    else if (socket.bytesRead > SMTP_MAX_READ_BYTES) {
      clearInterval(watch);
      socket.destroy(Object.assign(new Error(`the SMTP server ${host} sent more than ${SMTP_MAX_READ_BYTES} bytes on one connection`), { code: 'EPROTO' }));
    }
  }, WATCH_MS);
  watch.unref();
  socket.once('close', () => clearInterval(watch));
}

function vettedLookup(allow: AllowList): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      if (addresses.length === 0) return callback(Object.assign(new Error(`no addresses for ${hostname}`), { code: 'ENOTFOUND' }), []);
      // A name with any internal answer is refused outright: the outcome must not depend on order.
      for (const { address } of addresses) {
        const verdict = vetAddress(address, allow);
        if (!verdict.allowed) return callback(new BlockedTargetError(hostname, address, verdict.range), []);
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
