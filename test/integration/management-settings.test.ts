// Secrets, SMTP settings and project auth settings through the Management API: validation, the
// write-only values (never in a response, the audit log or the stored bytes), 201/200 semantics,
// size limits, and the audit trail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aad } from '../../src/lib/secret-box.js';
import { startTestService, type TestService, type TestProject } from '../helpers/service.js';

describe('management settings', () => {
  let svc: TestService;
  let p: TestProject;

  beforeAll(async () => {
    svc = await startTestService({ env: { OUTBOUND_ALLOW_CIDRS: '' } });
    p = await svc.project('pro');
  });
  afterAll(async () => svc?.stop());

  const audit = async () => (await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/audit?limit=100`)).body as { action: string; resource_id: string | null; details: unknown }[];

  describe('secrets', () => {
    const path = (name: string) => `/v1/projects/${p.ref}/secrets/${name}`;
    const VALUE = 'sk_live_the-value-that-must-never-be-seen';

    it('creates (201), replaces (200) and never returns the value', async () => {
      const created = await svc.api(p.ownerToken, 'PUT', path('API_KEY'), { value: VALUE });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ name: 'API_KEY', created_at: expect.any(String), updated_at: expect.any(String) });
      const replaced = await svc.api(p.ownerToken, 'PUT', path('API_KEY'), { value: `${VALUE}-2` });
      expect(replaced.status).toBe(200);
      expect(replaced.body.created_at).toBe(created.body.created_at);
      const list = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/secrets`);
      expect(list.status).toBe(200);
      expect(list.body).toEqual([{ name: 'API_KEY', created_at: created.body.created_at, updated_at: replaced.body.updated_at }]);
      expect(JSON.stringify([created.body, replaced.body, list.body])).not.toContain('never-be-seen');
    });

    it('stores the value encrypted, bound to project and name', async () => {
      const r = await svc.ctx.db.query('select value_enc from secrets where project_ref = $1 and name = $2', [p.ref, 'API_KEY']);
      const stored: Buffer = r.rows[0].value_enc;
      expect(stored.includes(Buffer.from('never-be-seen'))).toBe(false);
      expect(svc.ctx.box.open(stored, aad.secret(p.ref, 'API_KEY'))).toBe(`${VALUE}-2`);
      expect(() => svc.ctx.box.open(stored, aad.secret(p.ref, 'OTHER'))).toThrow();
    });

    it('treats names case-sensitively and accepts the edges of the name rule', async () => {
      for (const name of ['api_key', '_', 'A', `a${'b'.repeat(63)}`]) {
        expect((await svc.api(p.ownerToken, 'PUT', path(name), { value: 'v' })).status).toBe(201);
      }
      for (const name of ['1A', 'a-b', `a${'b'.repeat(64)}`, '%C3%A9', 'a.b', '%20a']) {
        const r = await svc.api(p.ownerToken, 'PUT', path(name), { value: 'v' });
        expect(r.status, name).toBe(400);
        expect(r.body.code).toBe('validation_failed');
      }
    });

    it('accepts 16 KB counted in UTF-8 bytes, refuses one byte more without echoing it', async () => {
      expect((await svc.api(p.ownerToken, 'PUT', path('BIG'), { value: 'é'.repeat(8192) })).status).toBe(201);
      // 16384 one-byte characters that JSON must escape as \u0001: the body is ~96 KB
      expect((await svc.api(p.ownerToken, 'PUT', path('ESCAPED'), { value: '\u0001'.repeat(16384) })).status).toBe(201);
      const over = await svc.api(p.ownerToken, 'PUT', path('BIG'), { value: `${'é'.repeat(8192)}x` });
      expect(over.status).toBe(400);
      expect(over.body.code).toBe('validation_failed');
      expect(over.body.message).not.toContain('é');
      const huge = await svc.api(p.ownerToken, 'PUT', path('BIG'), { value: 'x'.repeat(200_000) });
      expect(huge.status).toBe(413);
      expect(huge.body.code).toBe('payload_too_large');
    });

    it.each([[{}], [{ value: 5 }], [{ value: null }], [{ value: 'v', extra: 1 }], [['v']], ['v']])('refuses body %j', async (body) => {
      const r = await svc.api(p.ownerToken, 'PUT', path('X'), body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('validation_failed');
    });

    it('deletes (204), then 404 secret_not_found; a body on DELETE is refused', async () => {
      expect((await svc.api(p.ownerToken, 'DELETE', path('api_key'), { force: true })).status).toBe(400);
      expect((await svc.api(p.ownerToken, 'DELETE', path('api_key'))).status).toBe(204);
      const again = await svc.api(p.ownerToken, 'DELETE', path('api_key'));
      expect(again.status).toBe(404);
      expect(again.body.code).toBe('secret_not_found');
      expect((await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/secrets`)).body.map((s: { name: string }) => s.name)).not.toContain('api_key');
    });

    it('audits create, replace and delete without the value', async () => {
      const entries = (await audit()).filter((e) => e.action.startsWith('secret.'));
      expect(entries.filter((e) => e.resource_id === 'API_KEY').map((e) => e.action)).toEqual(['secret.replace', 'secret.create']);
      expect(entries.find((e) => e.action === 'secret.delete')?.resource_id).toBe('api_key');
      expect(JSON.stringify(entries)).not.toContain('never-be-seen');
    });
  });

  describe('SMTP settings', () => {
    const path = () => `/v1/projects/${p.ref}/smtp`;
    const valid = { host: 'smtp.example.com', port: 587, user: 'mailer', password: 'smtp-password-never-shown', sender_email: 'no-reply@example.com', sender_name: 'Example', tls_mode: 'starttls' };

    it.each([
      [{ host: 'http://smtp.example.com' }, 'validation_failed'],
      [{ host: 'smtp.example.com:25' }, 'validation_failed'],
      [{ host: 'a b' }, 'validation_failed'],
      [{ host: '127.0.0.1' }, 'url_not_allowed'],
      [{ host: '2130706433' }, 'url_not_allowed'],
      [{ host: '10.1.2.3' }, 'url_not_allowed'],
      [{ host: 'localhost' }, 'url_not_allowed'],
      [{ host: '::1' }, 'url_not_allowed'],
      [{ host: '[::ffff:127.0.0.1]' }, 'url_not_allowed'],
      [{ host: '169.254.169.254' }, 'url_not_allowed'],
      [{ port: 0 }, 'validation_failed'],
      [{ port: 65536 }, 'validation_failed'],
      [{ port: '587' }, 'validation_failed'],
      [{ sender_email: 'not-an-email' }, 'validation_failed'],
      [{ sender_name: 'Evil\r\nBcc: x@y.z' }, 'validation_failed'],
      [{ tls_mode: 'ssl' }, 'validation_failed'],
      [{ user: null, password: 'orphan' }, 'validation_failed'],
      [{ user: 'mailer', password: undefined }, 'validation_failed'],
      [{ password_set: true }, 'validation_failed'],
    ])('refuses %j with %s', async (change, code) => {
      const r = await svc.api(p.ownerToken, 'PUT', path(), { ...valid, ...change });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe(code);
    });

    it('saves (201) and enables the outbox; GET shows password_set, never the password', async () => {
      const r = await svc.api(p.ownerToken, 'PUT', path(), valid);
      expect(r.status).toBe(201);
      const view = { host: 'smtp.example.com', port: 587, user: 'mailer', password_set: true, sender_email: 'no-reply@example.com', sender_name: 'Example', tls_mode: 'starttls' };
      expect(r.body).toMatchObject(view);
      const got = await svc.api(p.ownerToken, 'GET', path());
      expect(got.body).toMatchObject(view);
      expect(JSON.stringify([r.body, got.body])).not.toContain('never-shown');
      expect((await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}`)).body.outbox_enabled).toBe(true);

      const stored = (await svc.ctx.db.query('select password_enc from smtp_settings where project_ref = $1', [p.ref])).rows[0].password_enc as Buffer;
      expect(stored.includes(Buffer.from('never-shown'))).toBe(false);
      expect(svc.ctx.box.open(stored, aad.smtpPassword(p.ref))).toBe(valid.password);
    });

    it('replaces (200), keeping the stored password when none is sent; removes it with the user', async () => {
      const { password: _, ...noPassword } = valid;
      const r = await svc.api(p.ownerToken, 'PUT', path(), { ...noPassword, port: 465, tls_mode: 'implicit' });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ port: 465, tls_mode: 'implicit', password_set: true });
      const stored = (await svc.ctx.db.query('select password_enc from smtp_settings where project_ref = $1', [p.ref])).rows[0].password_enc as Buffer;
      expect(svc.ctx.box.open(stored, aad.smtpPassword(p.ref))).toBe(valid.password);

      const anon = await svc.api(p.ownerToken, 'PUT', path(), { host: 'smtp.example.com', port: 25, sender_email: 'a@example.com', tls_mode: 'none' });
      expect(anon.body).toMatchObject({ user: null, password_set: false, sender_name: null });
    });

    it('deletes (204), then 404 smtp_not_configured', async () => {
      expect((await svc.api(p.ownerToken, 'DELETE', path())).status).toBe(204);
      expect((await svc.api(p.ownerToken, 'GET', path())).body.code).toBe('smtp_not_configured');
      expect((await svc.api(p.ownerToken, 'DELETE', path())).status).toBe(404);
    });

    it('audits each change without the password', async () => {
      const entries = (await audit()).filter((e) => e.action.startsWith('smtp.'));
      expect(entries.map((e) => e.action)).toEqual(['smtp.delete', 'smtp.put', 'smtp.put', 'smtp.put']);
      expect(entries.map((e) => (e.details as { password?: string }).password).slice(1)).toEqual(['removed', 'kept', 'set']);
      expect(JSON.stringify(entries)).not.toContain('never-shown');
    });
  });

  describe('project auth settings', () => {
    const path = () => `/v1/projects/${p.ref}`;

    it('updates site_url, redirect URLs, sign-ups and linking, partially', async () => {
      const r = await svc.api(p.ownerToken, 'PATCH', path(), {
        site_url: 'https://app.example.com',
        additional_redirect_urls: ['https://app.example.com/auth/callback', 'http://localhost:3000/callback'],
        disable_signup: true,
        allow_linking: true,
      });
      expect(r.status).toBe(200);
      expect(r.body.auth).toEqual({
        site_url: 'https://app.example.com/',
        additional_redirect_urls: ['https://app.example.com/auth/callback', 'http://localhost:3000/callback'],
        disable_signup: true,
        allow_linking: true,
      });
      const partial = await svc.api(p.ownerToken, 'PATCH', path(), { allow_linking: false });
      expect(partial.body.auth).toMatchObject({ site_url: 'https://app.example.com/', disable_signup: true, allow_linking: false });
      expect((await svc.api(p.ownerToken, 'GET', path())).body.auth.allow_linking).toBe(false);
      const entries = (await audit()).filter((e) => e.action === 'project.update');
      expect(entries.map((e) => (e.details as { fields: string[] }).fields)).toEqual([['allow_linking'], ['site_url', 'additional_redirect_urls', 'disable_signup', 'allow_linking']]);
    });

    it.each([
      [{}, 'validation_failed'],
      [{ site_url: 'javascript:alert(1)' }, 'invalid_url'],
      [{ site_url: 'app.example.com' }, 'invalid_url'],
      [{ site_url: 'https://user:pw@app.example.com' }, 'invalid_url'],
      [{ site_url: 42 }, 'validation_failed'],
      [{ additional_redirect_urls: ['ftp://example.com/'] }, 'invalid_url'],
      [{ additional_redirect_urls: 'https://example.com' }, 'validation_failed'],
      [{ additional_redirect_urls: ['https://a.example', 'https://a.example'] }, 'validation_failed'],
      [{ additional_redirect_urls: Array.from({ length: 101 }, (_, i) => `https://a${i}.example`) }, 'validation_failed'],
      [{ disable_signup: 'yes' }, 'validation_failed'],
      [{ plan: 'enterprise' }, 'validation_failed'],
      [{ anon_key: 'x' }, 'validation_failed'],
    ])('refuses %j with %s', async (body, code) => {
      const r = await svc.api(p.ownerToken, 'PATCH', path(), body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe(code);
    });

    it('caps management bodies at 64 KB', async () => {
      const r = await svc.api(p.ownerToken, 'PATCH', path(), { site_url: `https://example.com/${'a'.repeat(70_000)}` });
      expect(r.status).toBe(413);
      expect(r.body.code).toBe('payload_too_large');
    });
  });
});
