// Asymmetric webhook signatures (Standard Webhooks v1a, ed25519) end to end: a webhook created with
// signature_scheme v1a shows its whpk_ public key and never its secret key; the secret key is sealed
// at rest; requests reaching a real receiver verify with node:crypto and the public key alone; a
// rotation, and a move between schemes, keep both signatures for the grace period.
import { createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { aad } from '../../src/lib/secret-box.js';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver, type Received } from '../helpers/receiver.js';

/** Verifies a request's v1a signatures with the public key only (independent of the service's code). */
function v1aVerifies(publicKey: string, r: Received): boolean {
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.slice('whpk_'.length), 'base64').toString('base64url') }, format: 'jwk' });
  const content = Buffer.from(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`);
  return String(r.headers['webhook-signature'])
    .split(' ')
    .filter((s) => s.startsWith('v1a,'))
    .some((s) => verify(null, content, key, Buffer.from(s.slice('v1a,'.length), 'base64')));
}
const versions = (r: Received) => String(r.headers['webhook-signature']).split(' ').map((s) => s.split(',')[0]);

describe('asymmetric webhook signatures (v1a)', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();
  const responses: unknown[] = [];
  let hook: { id: string; public_key: string };

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', SIGNING_SECRET_GRACE: '2h' } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('free');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.items (id serial primary key, name text)');
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  async function call(method: string, path: string, body?: unknown) {
    const r = await svc.api(project.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);
    responses.push(r.body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r;
  }
  /** The request for a row inserted now, once the webhook's current keys sign it (the dispatcher caches them up to 1 s). */
  const requestFor = (name: string, until: (r: Received) => boolean) =>
    eventually(async () => {
      const { rows } = await db.query('insert into public.items (name) values ($1) returning id', [name]);
      const r = await eventually(async () => receiver.requests.find((x) => x.body.includes(`"id":${rows[0].id},`)), 30_000, `the request for ${name}`);
      return until(r) ? r : null;
    }, 30_000, `a request for ${name} signed as expected`);
  const sealedKeys = async () =>
    (await svc.ctx.db.query('select secret_enc, scheme, public_key, expires_at from webhook_signing_secrets where webhook_id = $1 order by created_at', [hook.id])).rows;

  it('creates a v1a webhook: the public key in the record, no secret in the response, the secret key sealed', async () => {
    const r = await call('POST', '/webhooks', { name: 'items', table: 'public.items', events: ['INSERT'], url: `${receiver.url}/items`, signature_scheme: 'v1a' });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ signature_scheme: 'v1a', public_key: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/), previous_secret_expires_at: null });
    expect(r.body).not.toHaveProperty('signing_secret');
    hook = r.body;
    expect((await call('GET', `/webhooks/${hook.id}`)).body).toMatchObject({ signature_scheme: 'v1a', public_key: hook.public_key });
    const [k] = await sealedKeys();
    expect(k).toMatchObject({ scheme: 'v1a', public_key: hook.public_key, expires_at: null });
    const secretKey = svc.ctx.box.open(k.secret_enc, aad.signingSecret(hook.id));
    expect(secretKey).toMatch(/^whsk_/);
    expect((k.secret_enc as Buffer).includes(Buffer.from(secretKey.slice(5), 'base64').subarray(0, 32))).toBe(false);
  });

  it('signs deliveries with ed25519: verified by node:crypto with the public key alone', async () => {
    const r = await requestFor('first', () => true);
    expect(versions(r)).toEqual(['v1a']);
    expect(v1aVerifies(hook.public_key, r)).toBe(true);
    expect(v1aVerifies(`whpk_${Buffer.alloc(32, 9).toString('base64')}`, r)).toBe(false);
    expect(JSON.parse(r.body)).toMatchObject({ type: 'INSERT', record: { name: 'first' }, webhook_id: hook.id });
  });

  it('rotates: a new public key, and both keys sign during the grace period', async () => {
    const r = await call('PATCH', `/webhooks/${hook.id}`, { rotate_secret: true });
    expect(r.body).not.toHaveProperty('signing_secret');
    expect(r.body.public_key).toMatch(/^whpk_/);
    expect(r.body.public_key).not.toBe(hook.public_key);
    expect(Date.parse(r.body.previous_secret_expires_at) - Date.now()).toBeGreaterThan(3600_000);
    const got = await requestFor('rotated', (x) => versions(x).length === 2);
    expect(versions(got)).toEqual(['v1a', 'v1a']);
    expect(v1aVerifies(r.body.public_key, got)).toBe(true);
    expect(v1aVerifies(hook.public_key, got)).toBe(true);
    hook = r.body;
  });

  it('moves to v1 and back with an overlap: v1 and v1a signatures side by side', async () => {
    const toV1 = await call('PATCH', `/webhooks/${hook.id}`, { signature_scheme: 'v1' });
    expect(toV1.body).toMatchObject({ signature_scheme: 'v1', public_key: null, signing_secret: expect.stringMatching(/^whsec_/) });
    let got = await requestFor('to v1', (x) => versions(x).includes('v1'));
    expect(versions(got)).toEqual(['v1', 'v1a', 'v1a']);
    expect(new Webhook(toV1.body.signing_secret).verify(got.body, got.headers as Record<string, string>)).toBeTruthy();
    expect(v1aVerifies(hook.public_key, got)).toBe(true);

    const back = await call('PATCH', `/webhooks/${hook.id}`, { signature_scheme: 'v1a' });
    expect(back.body).toMatchObject({ signature_scheme: 'v1a', public_key: expect.stringMatching(/^whpk_/) });
    expect(back.body).not.toHaveProperty('signing_secret');
    got = await requestFor('back to v1a', (x) => versions(x).length === 4);
    expect(versions(got)).toEqual(['v1a', 'v1', 'v1a', 'v1a']);
    expect(v1aVerifies(back.body.public_key, got)).toBe(true);
    expect(new Webhook(toV1.body.signing_secret).verify(got.body, got.headers as Record<string, string>)).toBeTruthy();
    // an unchanged scheme is no rotation
    const same = await call('PATCH', `/webhooks/${hook.id}`, { signature_scheme: 'v1a' });
    expect(same.body.public_key).toBe(back.body.public_key);
    expect((await sealedKeys()).filter((k) => k.expires_at === null)).toHaveLength(1);
  });

  it('never shows a secret key: no API response or audit entry holds one', async () => {
    await call('GET', '/webhooks');
    await call('GET', '/audit?limit=100');
    const keys = (await sealedKeys()).filter((k) => k.scheme === 'v1a').map((k) => svc.ctx.box.open(k.secret_enc, aad.signingSecret(hook.id)));
    expect(keys.length).toBe(3);
    const seen = JSON.stringify(responses);
    for (const k of keys) {
      const raw = Buffer.from(k.slice(5), 'base64');
      for (const needle of [k, k.slice(5), raw.subarray(0, 32).toString('base64'), raw.subarray(0, 32).toString('base64url'), raw.subarray(0, 32).toString('hex')]) {
        expect(seen).not.toContain(needle.slice(0, 40));
      }
    }
    expect(seen).not.toContain('whsk_');
    const audit = (await call('GET', '/audit?limit=100')).body;
    expect(audit.filter((e: { action: string }) => e.action === 'webhook.rotate_secret').map((e: { details: unknown }) => e.details)).toEqual([
      { grace_ms: 7_200_000, signature_scheme: 'v1a' },
      { grace_ms: 7_200_000, signature_scheme: 'v1' },
      { grace_ms: 7_200_000, signature_scheme: 'v1a' },
    ]);
  });
});
