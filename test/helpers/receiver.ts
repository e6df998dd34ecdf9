// A real HTTP receiver for delivery tests: records every request (method, path, headers, raw
// body), answers per path with a changeable rule (status, headers, body), and can hang a request
// until released — the stand-in for slow or dead targets.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export type Answer =
  | { status: number; headers?: Record<string, string>; body?: string }
  | { hang: true };

export class Receiver {
  readonly requests: Received[] = [];
  readonly #rules = new Map<string, Answer>();
  #default: Answer = { status: 200, body: 'ok' };
  readonly #hanging = new Set<http.ServerResponse>();
  #server!: http.Server;
  url = '';

  /** Listens on host (default 127.0.0.1) and a free port. */
  async start(host = '127.0.0.1'): Promise<this> {
    this.#server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0];
        this.requests.push({ method: req.method ?? '', path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        const answer = this.#rules.get(path) ?? this.#default;
        if ('hang' in answer) {
          this.#hanging.add(res);
          res.on('close', () => this.#hanging.delete(res));
          return;
        }
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      });
    });
    await new Promise<void>((r) => this.#server.listen(0, host, r));
    const { port } = this.#server.address() as AddressInfo;
    this.url = `http://${host}:${port}`;
    return this;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** How requests to `path` (without query) are answered from now on. */
  answer(path: string, answer: Answer): void {
    this.#rules.set(path, answer);
  }

  answerDefault(answer: Answer): void {
    this.#default = answer;
  }

  /** Answers every hanging request with `status` and stops hanging. */
  release(status = 200): void {
    for (const res of this.#hanging) {
      res.writeHead(status);
      res.end('released');
    }
    this.#hanging.clear();
  }

  get hanging(): number {
    return this.#hanging.size;
  }

  to(path: string): Received[] {
    return this.requests.filter((r) => r.path.split('?')[0] === path);
  }

  byWebhookId(id: string): Received[] {
    return this.requests.filter((r) => r.headers['webhook-id'] === id);
  }

  async stop(): Promise<void> {
    for (const res of this.#hanging) res.destroy();
    this.#server.closeAllConnections();
    await new Promise((r) => this.#server.close(r));
  }
}
