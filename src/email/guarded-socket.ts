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
    socket.once('connect', () => settle(null));
    socket.once('error', settle);
  };
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
