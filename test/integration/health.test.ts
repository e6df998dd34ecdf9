import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { ensureOutboxEnabled } from '../../src/outbox/service.js';

describe('GET /health', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => svc?.stop());

  it('is ok when Postgres, Kafka, Connect and every registered connector are healthy', async () => {
    const p = await svc.project('free');
    await ensureOutboxEnabled(svc.ctx, p.ref);
    const r = await svc.api(null, 'GET', '/health');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ok');
    expect(r.body.checks.connectors[p.ref]).toMatchObject({ ok: true });
  });

  it('answers 503 naming the part when a connector is not running', async () => {
    const p = await svc.project('free');
    await svc.ctx.db.query("update projects set outbox_enabled_at = now(), connector_name = 'outbox.missing' where ref = $1", [p.ref]);
    const r = await svc.api(null, 'GET', '/health');
    expect(r.status).toBe(503);
    expect(r.body.status).toBe('unavailable');
    expect(r.body.checks.connectors[p.ref]).toMatchObject({ ok: false, detail: 'not registered' });
    expect(r.body.checks.postgres.ok).toBe(true);
    await svc.ctx.db.query('update projects set outbox_enabled_at = null, connector_name = null where ref = $1', [p.ref]);
  });
});
