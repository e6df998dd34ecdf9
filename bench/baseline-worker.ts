// The baseline: what many teams run instead of an outbox service. A graphile-worker job queue in
// the project database (schema graphile_worker), the job enqueued by a trigger in the inserting
// transaction, and a worker with the dispatcher's concurrency POSTing each job to the receiver with
// undici over keep-alive connections, signed the Standard Webhooks way as the dispatcher does, so
// both sides pay for the same work. Its own process, like the service, forked by the benchmark.
import { createHmac, randomBytes } from 'node:crypto';
import { Logger, run } from 'graphile-worker';
import { Agent, request } from 'undici';

const url = process.env.RECEIVER_URL!;
const concurrency = Number(process.env.CONCURRENCY ?? 256);
const key = randomBytes(32);
const agent = new Agent({ connections: concurrency, keepAliveTimeout: 60_000, pipelining: 1 });

// graphile-worker logs every job at info level; keep warnings and errors only
const logger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`[graphile-worker] ${level}: ${message}`);
});

async function main() {
  const runner = await run({
    connectionString: process.env.DATABASE_URL!,
    concurrency,
    maxPoolSize: Number(process.env.POOL_SIZE ?? concurrency),
    pollInterval: 1000,
    noHandleSignals: true,
    logger,
    taskList: {
      deliver: async (payload, helpers) => {
        const body = JSON.stringify(payload);
        const id = `msg_${helpers.job.id}`;
        const ts = Math.floor(Date.now() / 1000);
        const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
        const res = await request(url, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${sig}` },
          body,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        await res.body.dump();
        if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}`);
      },
    },
  });
  process.send?.({ ready: true });
  process.on('disconnect', () => {
    void runner.stop().finally(() => process.exit(0));
  });
}

main().catch((e) => {
  console.error('baseline worker failed:', e);
  process.exit(1);
});
