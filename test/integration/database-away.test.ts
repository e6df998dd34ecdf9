// The control database goes away (it refuses connections and its sessions are cut, as in a
// restart) and comes back, against a real service: meanwhile /health says what waits for it, the
// Management API answers 503 service_unavailable with Retry-After (not 500), what needs no
// database keeps answering; afterwards the pools reconnect by themselves.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbUrl, eventually, stack } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { createPool } from '../../src/db/pool.js';

describe('the control database away and back', () => {
  let svc: TestService;
  let p: TestProject;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: stack().adminDatabaseUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    svc = await startTestService({ roles: ['api'] });
    p = await svc.project('enterprise');
  });
  afterAll(async () => {
    await admin(`alter database ${pg.escapeIdentifier(svc.controlDb)} allow_connections true`).catch(() => {});
    await svc?.stop();
  });

  it('503 with Retry-After while it is away, what needs no database keeps answering, and all is well after', async () => {
    expect((await svc.api(p.ownerToken, 'GET', '/v1/projects')).status).toBe(200);
    await admin(`alter database ${pg.escapeIdentifier(svc.controlDb)} allow_connections false`);
    await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${svc.controlDb}'`);

    const mgmt = await svc.api(p.ownerToken, 'GET', '/v1/projects');
    expect(mgmt.status).toBe(503);
    expect(mgmt.body).toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('try again') });
    expect(mgmt.headers.get('retry-after')).toBe('5');
    const health = await svc.api(null, 'GET', '/health');
    expect(health.status).toBe(503);
    expect(health.body.checks.postgres.detail).toContain('control database unreachable');
    expect(health.body.checks.postgres.detail).toContain('the Management API, sign-ins, and recording delivery outcomes wait for it');
    expect(health.body.checks.kafka.ok).toBe(true);
    expect((await svc.api(null, 'GET', '/openapi.json')).status).toBe(200);

    await admin(`alter database ${pg.escapeIdentifier(svc.controlDb)} allow_connections true`);
    await eventually(async () => (await svc.api(p.ownerToken, 'GET', '/v1/projects')).status === 200, 10_000, 'the Management API back');
    expect((await svc.api(null, 'GET', '/health')).body.checks.postgres).toEqual({ ok: true });
  });

  it('a connection cut while a client is checked out between two queries fails its next query, not the process', async () => {
    // the pool the service uses, on the test's control database; the client is held as a
    // transaction in progress or the supervisor's advisory lock holds one
    const pool = createPool(dbUrl(svc.controlDb), 2, 'integrations-test-held');
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      const held = await pool.connect();
      const pid = (await held.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      await admin(`select pg_terminate_backend(${pid})`);
      await new Promise((r) => setTimeout(r, 300)); // the FATAL message arrives while no query runs
      expect(uncaught).toEqual([]);
      await expect(held.query('select 1')).rejects.toThrow();
      held.release(true);
      expect((await pool.query('select 1 as one')).rows[0].one).toBe(1); // a new connection
    } finally {
      process.off('uncaughtException', onUncaught);
      await pool.end();
    }
  });
});
