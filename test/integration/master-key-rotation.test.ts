// Rotating MASTER_KEY on a live installation (docs/operations.md, "Rotate the master key"): values sealed under the old key
// keep working while MASTER_KEY_PREVIOUS holds it, `reseal` moves every sealed column to the new
// key, and afterwards a service with only the new key still delivers a webhook whose header uses a
// project secret and whose signature verifies with the secret issued before the rotation.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { reseal } from '../../src/admin/reseal.js';
import { aad } from '../../src/lib/secret-box.js';
import { eventually, uniqueName } from '../helpers/env.js';
import { Receiver } from '../helpers/receiver.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

const OLD = randomBytes(32).toString('base64');
const NEW = randomBytes(32).toString('base64');

describe('master key rotation', () => {
  const receiver = new Receiver();
  const services: TestService[] = [];
  let project: TestProject;
  let signingSecret: string;
  let controlDb: string;
  const prefix = uniqueName('t');

  async function service(env: Record<string, string>, opts: { keep?: boolean; roles?: string[] } = {}) {
    const svc = await startTestService({ roles: opts.roles ?? ['api'], env: { TOPIC_PREFIX: prefix, OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', ...env }, controlDb, keep: opts.keep ?? true });
    controlDb = svc.controlDb;
    services.push(svc);
    return svc;
  }
  const call = async (svc: TestService, method: string, path: string, body?: unknown) => (await svc.manage(project, method, path, body)).body;

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    // before the rotation: everything sealed under the old key
    const before = await service({ MASTER_KEY: OLD });
    project = await before.project('pro');
    await call(before, 'PUT', '/secrets/HOOK_TOKEN', { value: 'token-sealed-before-rotation' });
    await call(before, 'PUT', '/smtp', { host: 'smtp.example.com', port: 587, user: 'mailer', password: 'smtp-password-before', sender_email: 'no-reply@example.com', tls_mode: 'starttls' });
    const db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.orders (id serial primary key, note text)');
    await db.end();
    const hook = await call(before, 'POST', '/webhooks', {
      name: 'orders',
      table: 'public.orders',
      events: ['INSERT'],
      url: `${receiver.url}/hook`,
      headers: { authorization: 'Token {{secret:HOOK_TOKEN}}' },
      timeout_ms: 5000,
    });
    signingSecret = hook.signing_secret;
    // an OIDC client secret and a sign-in flow's verifier, sealed as the API seals them
    const provider = await before.ctx.db.query(
      `insert into sso_providers (project_ref, kind, name, issuer, client_id, client_secret_enc)
       values ($1, 'oidc', 'Corp', 'https://idp.example.com', 'client', $2) returning id`,
      [project.ref, Buffer.alloc(0)],
    );
    const providerId = provider.rows[0].id;
    await before.ctx.db.query('update sso_providers set client_secret_enc = $1 where id = $2', [before.ctx.box.seal('client-secret-before', aad.clientSecret(providerId)), providerId]);
    await before.stop();
  }, 120_000);

  afterAll(async () => {
    // the last service drops the control and project databases and the connector
    const last = await service({ MASTER_KEY: NEW }, { keep: false }).catch(() => null);
    await last?.stop();
    await receiver.stop();
  });

  it('finds values only the previous key opens, re-seals them, and then needs no previous key', async () => {
    const rotating = await service({ MASTER_KEY: NEW, MASTER_KEY_PREVIOUS: OLD });
    const check = await reseal(rotating.ctx, { check: true });
    expect(check.ok).toBe(false);
    expect(check.columns['secrets.value_enc']).toMatchObject({ current: 0, previous: 1, unreadable: 0 });
    expect(check.columns['projects.jwt_private_jwk_enc']).toMatchObject({ current: 0, previous: 1 });
    expect(check.columns['sso_providers.client_secret_enc']).toMatchObject({ previous: 1 });

    // during the rotation the API seals under the new key: that value is already current
    await call(rotating, 'PUT', '/secrets/ADDED_DURING_ROTATION', { value: 'new-key-value' });
    const done = await reseal(rotating.ctx);
    expect(done.ok).toBe(true);
    expect(done.columns['secrets.value_enc']).toEqual({ current: 1, previous: 1, skipped: 0, unreadable: 0 });
    for (const name of ['projects.database_url_enc', 'projects.jwt_private_jwk_enc', 'smtp_settings.password_enc', 'webhook_signing_secrets.secret_enc', 'sso_providers.client_secret_enc']) {
      expect(done.columns[name], name).toMatchObject({ previous: 1, unreadable: 0 });
    }
    expect((await reseal(rotating.ctx, { check: true })).ok).toBe(true);
    await rotating.stop();

    // the old key alone opens nothing any more: the values really were re-encrypted
    const oldOnly = await service({ MASTER_KEY: OLD });
    const stale = await reseal(oldOnly.ctx, { check: true });
    expect(stale.ok).toBe(false);
    expect(stale.columns['secrets.value_enc'].unreadable).toBe(2);
    await oldOnly.stop();
  }, 120_000);

  it('delivers with only the new key: secret substituted, signed with the pre-rotation signing secret', async () => {
    const after = await service({ MASTER_KEY: NEW }, { roles: ['api', 'dispatcher'] });
    const db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query("insert into public.orders (note) values ('after rotation')");
    await db.end();
    const [req] = await eventually(async () => {
      const found = receiver.requests.filter((r) => r.body.includes('after rotation'));
      return found.length > 0 ? found : null;
    }, 60_000, 'the webhook after the rotation');
    expect(req.headers.authorization).toBe('Token token-sealed-before-rotation');
    expect(() =>
      new Webhook(signingSecret).verify(req.body, {
        'webhook-id': String(req.headers['webhook-id']),
        'webhook-timestamp': String(req.headers['webhook-timestamp']),
        'webhook-signature': String(req.headers['webhook-signature']),
      }),
    ).not.toThrow();
    await after.stop();
  }, 90_000);
});
