// An HTTP receiver that answers each path from a script: the n-th request to a path gets the n-th
// answer, the last answer repeats. For retry tests ("500, then 200") where switching a rule after
// the first request would race a retry made milliseconds later.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface Hit {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export class ScriptedReceiver {
  readonly hits: Hit[] = [];
  readonly #scripts = new Map<string, ScriptedAnswer[]>();
  #server!: http.Server;
  url = '';

  async start(host = '127.0.0.2'): Promise<this> {
    this.#server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0];
        const n = this.hits.filter((h) => h.path === path).length;
        this.hits.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        const script = this.#scripts.get(path) ?? [{ status: 200 }];
        const a = script[Math.min(n, script.length - 1)];
        res.writeHead(a.status, a.headers ?? {});
        res.end(a.body ?? '');
      });
    });
    await new Promise<void>((r) => this.#server.listen(0, host, r));
    this.url = `http://${host}:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  /** Requests to `path` are answered with these, in order; the last one repeats. */
  script(path: string, ...answers: ScriptedAnswer[]): void {
    this.#scripts.set(path, answers);
  }

  to(path: string): Hit[] {
    return this.hits.filter((h) => h.path === path);
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((r) => this.#server.close(r));
  }
}
