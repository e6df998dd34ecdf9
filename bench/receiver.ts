// The webhook receiver, run as its own process (forked by the benchmark) so that the load
// generator's CPU use in the benchmark process does not delay receipts and inflate latency.
//
// It answers 200 to every request, except those carrying a row of the table `bench_hang`, which it
// never answers (the "one target in a hundred that times out"). That target listens on a second
// port, so it is a different origin, as a different customer's endpoint would be (an HTTP client
// pools connections per origin). It reports what it received to the
// parent every 50 ms as [seq, receipt time] pairs, seq being the generator's sequence number found
// in the row; times are performance.timeOrigin + performance.now(), the clock the generator uses.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const HANG_TABLE = 'bench_hang';
const now = () => performance.timeOrigin + performance.now();

let batch: number[] = [];
let hung = 0;
let unparsable = 0;
const hanging = new Set<http.ServerResponse>();

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const t = now();
    let seq: number | undefined;
    let table: string | undefined;
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      table = body?.table;
      seq = Number(body?.record?.seq);
    } catch {
      unparsable++;
    }
    if (table === HANG_TABLE) {
      hung++;
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    if (seq !== undefined && Number.isFinite(seq)) batch.push(seq, t);
    else unparsable++;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 65_000;
server.requestTimeout = 0;
server.maxRequestsPerSocket = 0;

const flush = () => {
  if (batch.length === 0 && hung === 0 && unparsable === 0) return;
  process.send?.({ receipts: batch, hung, unparsable });
  batch = [];
  hung = 0;
  unparsable = 0;
};
setInterval(flush, 50);

// the same handler: what decides hanging is the row's table, the port only makes it another origin
const hangServer = http.createServer(server.listeners('request')[0] as http.RequestListener);
hangServer.requestTimeout = 0;

server.listen(0, '127.0.0.1', () => {
  hangServer.listen(0, '127.0.0.1', () => {
    process.send?.({ port: (server.address() as { port: number }).port, hangPort: (hangServer.address() as { port: number }).port });
  });
});

process.on('disconnect', () => {
  for (const r of hanging) r.destroy();
  server.close();
  hangServer.close();
  process.exit(0);
});
