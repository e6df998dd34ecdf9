// GET /health on the public port says which part is down and counts the connectors, and names no
// project (until 2026-11-29 it listed every ref with an outbox, and each connector's last failure,
// to anyone); the whole report, per project, is on the metrics port.
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
    expect(r.body).toEqual({
      status: 'ok',
      checks: {
        postgres: { ok: true },
        kafka: { ok: true },
        connect: { ok: true },
        connectors: { ok: true, total: 1, failing: 0, slot_warnings: 0 },
        // this service runs the api role only: nothing supervises the connectors (informational),
        // and the public answer says so without the holder's name
        supervisor: { ok: false, detail: expect.stringContaining('dispatcher role') },
      },
    });
    const detailed = await svc.detailedHealth();
    expect(detailed.status).toBe(200);
    expect(detailed.body.checks.connectors[p.ref]).toMatchObject({ ok: true });
  });

  it('answers 503 naming the part when a connector is not running, and which one only on the metrics port', async () => {
    const p = await svc.project('free');
    await svc.ctx.db.query("update projects set outbox_enabled_at = now(), connector_name = 'outbox.missing' where ref = $1", [p.ref]);
    try {
      const r = await svc.api(null, 'GET', '/health');
      expect(r.status).toBe(503);
      expect(r.body.status).toBe('unavailable');
      expect(r.body.checks.connectors).toEqual({ ok: false, total: 2, failing: 1, slot_warnings: 0 });
      expect(r.body.checks.postgres).toEqual({ ok: true });
      expect(r.body.detail).toContain('metrics port');
      // nothing of a project on the public port: no ref (of either), no connector name
      const text = JSON.stringify(r.body);
      expect(text).not.toContain(p.ref);
      expect(text).not.toContain('outbox.missing');
      expect(text).not.toContain('not registered');

      const detailed = await svc.detailedHealth();
      expect(detailed.status).toBe(503);
      expect(detailed.body.checks.connectors[p.ref]).toMatchObject({ ok: false, detail: 'not registered' });
    } finally {
      await svc.ctx.db.query('update projects set outbox_enabled_at = null, connector_name = null where ref = $1', [p.ref]);
    }
  });
});
