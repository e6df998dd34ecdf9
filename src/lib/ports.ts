// Before anything starts (stack, consumers, workers): are the ports this process will listen on
// free? Without this check a second instance started beside a running one would join the consumer
// groups (and rebalance the first one) before failing on EADDRINUSE; with it, it stops at once
// with one line.
import net from 'node:net';

export interface PortNeed {
  /** what listens there, for the message ("API", "metrics") */
  what: string;
  /** the configuration key that moves it */
  key: string;
  host: string;
  port: number;
}

/** Resolves null when `host:port` can be bound now, or the errno code that refused it (EADDRINUSE, EACCES, ...). */
export function probePort(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'EUNKNOWN'));
    // exclusive: a port held by another process through cluster-shared handles still counts as taken
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve(null)));
  });
}

/** One line per port that cannot be bound, naming the key that moves it; empty when all are free. */
export async function busyPorts(needs: PortNeed[]): Promise<string[]> {
  const lines: string[] = [];
  for (const n of needs) {
    if (n.port === 0) continue; // any free port
    const code = await probePort(n.host, n.port);
    if (code === null) continue;
    const next = n.port < 65535 ? n.port + 1 : n.port - 1;
    lines.push(
      code === 'EADDRINUSE'
        ? `port ${n.port} on ${n.host} (${n.what}, ${n.key}) is already in use — is another instance running? Stop it, or start this one on another port: ${n.key}=${next} npm start`
        : code === 'EADDRNOTAVAIL'
          ? `cannot listen on ${n.host}:${n.port} (${n.what}): ${n.host} is not an address of this machine; check HOST / ${n.key === 'METRICS_PORT' ? 'METRICS_HOST' : 'HOST'}`
          : `cannot listen on ${n.host}:${n.port} (${n.what}, ${n.key}): ${code}${code === 'EACCES' ? ' (ports below 1024 need privileges; pick a higher one)' : ''}`,
    );
  }
  return lines;
}
