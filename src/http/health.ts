// GET /health: 200 {"status":"ok"} only when Postgres, Kafka, Kafka Connect and every registered
// connector are healthy; 503 with the failing parts otherwise. Cheap enough for a load balancer.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { enabledConnectors } from '../outbox/service.js';

type Check = { ok: boolean; detail?: string };

async function timed(p: Promise<Check>, ms = 3000): Promise<Check> {
  return Promise.race([p, new Promise<Check>((r) => setTimeout(() => r({ ok: false, detail: `no answer in ${ms}ms` }), ms))]).catch((e) => ({
    ok: false,
    detail: (e as Error).message,
  }));
}

export async function healthReport(ctx: AppContext) {
  const admin = ctx.kafka.admin();
  const [postgres, kafka, connect] = await Promise.all([
    timed(ctx.db.query('select 1').then(() => ({ ok: true }))),
    timed(
      (async () => {
        await admin.connect();
        try {
          await admin.fetchTopicMetadata({ topics: [ctx.topics.outbox] });
          return { ok: true };
        } finally {
          await admin.disconnect();
        }
      })(),
    ),
    timed(ctx.connect.health().then((ok) => ({ ok, detail: ok ? undefined : 'GET /health failed' }))),
  ]);
  const connectors: Record<string, Check> = {};
  if (postgres.ok && connect.ok) {
    for (const c of await enabledConnectors(ctx)) {
      connectors[c.ref] = await timed(
        ctx.connect.status(c.connector).then((s) => {
          const ok = !!s && s.connector === 'RUNNING' && s.tasks.length > 0 && s.tasks.every((t) => t.state === 'RUNNING');
          return { ok, detail: ok ? undefined : s ? `${s.connector} / ${s.tasks.map((t) => t.state).join(',')}` : 'not registered' };
        }),
      );
    }
  }
  const ok = postgres.ok && kafka.ok && connect.ok && Object.values(connectors).every((c) => c.ok);
  return { ok, body: { status: ok ? 'ok' : 'unavailable', checks: { postgres, kafka, connect, connectors } } };
}

export function registerHealth(app: FastifyInstance, ctx: AppContext) {
  app.get('/health', { schema: { tags: ['operations'], summary: 'Health of the service and every part it depends on' } }, async (_req, reply) => {
    const { ok, body } = await healthReport(ctx);
    return reply.code(ok ? 200 : 503).send(body);
  });
}
