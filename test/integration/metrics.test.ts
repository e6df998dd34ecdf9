// Prometheus metrics: a delivered webhook and the API calls that set it up show up on the metrics
// port with bounded labels, and nothing customer-controlled (project ref, target URL, table) is a
// label. Scraped over HTTP from the metrics server itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startMetricsServer, type MetricsServer } from '../../src/lib/metrics.js';
import { eventually } from '../helpers/env.js';
import { Receiver } from '../helpers/receiver.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

describe('metrics', () => {
  let svc: TestService;
  let project: TestProject;
  let metrics: MetricsServer;
  const receiver = new Receiver();
  const scrape = async () => (await fetch(`http://127.0.0.1:${metrics.port}/metrics`)).text();
  const value = (text: string, series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
  };

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api', 'dispatcher'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    metrics = await startMetricsServer('127.0.0.1', 0);
    project = await svc.project('pro');
  });
  afterAll(async () => {
    await metrics?.close();
    await svc?.stop();
    await receiver.stop();
  });

  it('counts delivery attempts and API requests with bounded labels', async () => {
    const before = await scrape();
    const delivered = 'integrations_delivery_attempts_total{kind="webhook",outcome="delivered"}';
    const created = 'integrations_http_requests_total{method="POST",route="/v1/projects/:ref/webhooks",status="2xx"}';

    const db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.metered (id serial primary key, note text)');
    const hook = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/webhooks`, { table: 'public.metered', events: ['INSERT'], url: `${receiver.url}/metered-target` });
    expect(hook.status).toBe(201);
    await db.query("insert into public.metered (note) values ('counted')");
    await db.end();
    await eventually(async () => receiver.requests.some((r) => r.body.includes('counted')), 60_000, 'the webhook');

    const after = await eventually(async () => {
      const t = await scrape();
      return value(t, delivered) > value(before, delivered) ? t : null;
    }, 10_000, 'the delivered counter');
    expect(value(after, created) - value(before, created)).toBe(1);
    expect(after).toMatch(/integrations_delivery_attempt_duration_seconds_bucket\{le="[\d.]+",kind="webhook",outcome="delivered"\}/);
    expect(after).toMatch(/integrations_delivery_latency_seconds_count\{kind="webhook"\} [1-9]/);
    expect(after).toMatch(/integrations_process_resident_memory_bytes \d+/);
    expect(after).toMatch(/integrations_nodejs_eventloop_lag_seconds/);
    // nothing a customer controls becomes a label
    for (const s of [project.ref, 'metered-target', 'metered', receiver.url]) expect(after).not.toContain(s);

    expect((await fetch(`http://127.0.0.1:${metrics.port}/`)).status).toBe(404);
    expect((await fetch(`${svc.url}/metrics`)).status).toBe(404); // not on the API port
  });
});
