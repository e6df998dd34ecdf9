// The audit trail of SSO management: every provider and user change made by the owner is one entry
// in GET /v1/projects/{ref}/audit (action, resource, actor, request id), written with the change
// (a refused change leaves none), and no entry holds a client secret, metadata contents, a token
// from a metadata URL, or a user's address.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveMetadata, TestIdp, testKeys } from '../helpers/saml-idp.js';
import { startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

interface Entry {
  action: string;
  resource_type: string;
  resource_id: string | null;
  details: Record<string, unknown>;
  actor: { owner_id: string | null; token_id: string | null };
  request_id: string | null;
}

describe('SSO management in the audit trail', () => {
  let svc: TestService;
  let project: TestProject;
  let idp: OidcIdp;
  const secrets = ['first-client-secret-xyz', 'second-client-secret-xyz'];
  const providers = () => `/v1/projects/${project.ref}/auth/providers/sso`;
  const users = () => `/v1/projects/${project.ref}/auth/users`;
  const owner = (method: string, p: string, body?: unknown) => svc.api(project.ownerToken, method, p, body);
  /** The project's entries oldest first, with the ones already seen dropped. */
  let seen = 0;
  const newEntries = async (): Promise<Entry[]> => {
    const r = await owner('GET', `/v1/projects/${project.ref}/audit?limit=100`);
    expect(r.status).toBe(200);
    const all = (r.body as Entry[]).reverse();
    const fresh = all.slice(seen);
    seen = all.length;
    return fresh;
  };
  const allEntriesText = async () => JSON.stringify((await owner('GET', `/v1/projects/${project.ref}/audit?limit=100`)).body);

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise');
    idp = await startOidcIdp({ redirectUris: [`${project.projectUrl}/auth/v1/sso/oidc/callback`] });
  });
  afterAll(async () => {
    await idp?.stop();
    await svc?.stop();
  });

  it('records OIDC provider create, update (secret, enable/disable) and delete without the secret', async () => {
    const created = await owner('POST', providers(), { kind: 'oidc', name: 'Corp', domains: ['Corp.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: secrets[0] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id;
    const [create, ...rest] = await newEntries();
    expect(rest).toEqual([]);
    expect(create).toMatchObject({
      action: 'sso_provider.create',
      resource_type: 'sso_provider',
      resource_id: id,
      details: { kind: 'oidc', name: 'Corp', domains: ['corp.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret_changed: true },
      actor: { owner_id: project.ownerId, token_id: expect.any(String) },
      request_id: expect.any(String),
    });

    expect((await owner('PATCH', `${providers()}/${id}`, { client_secret: secrets[1], scopes: ['email'] })).status).toBe(200);
    expect((await owner('PATCH', `${providers()}/${id}`, { enabled: false })).status).toBe(200);
    expect((await owner('DELETE', `${providers()}/${id}`)).status).toBe(200);
    const [secret, disable, del] = await newEntries();
    expect(secret).toMatchObject({ action: 'sso_provider.update', resource_id: id, details: { fields: ['client_secret', 'scopes'], client_secret_changed: true, scopes: ['openid', 'email'] } });
    expect(disable).toMatchObject({ action: 'sso_provider.update', resource_id: id, details: { fields: ['enabled'], enabled: false } });
    expect(disable.details).not.toHaveProperty('client_secret_changed');
    expect(del).toMatchObject({ action: 'sso_provider.delete', resource_type: 'sso_provider', resource_id: id, details: { kind: 'oidc', name: 'Corp', domains: ['corp.test'] } });

    const text = await allEntriesText();
    for (const s of secrets) expect(text).not.toContain(s);
  });

  it('records nothing for a refused change', async () => {
    const a = await owner('POST', providers(), { kind: 'oidc', name: 'A', domains: ['taken.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: secrets[0] });
    expect(a.status).toBe(201);
    await newEntries();
    // the domain check fails inside the transaction, after the row was written
    const b = await owner('POST', providers(), { kind: 'oidc', name: 'B', domains: ['taken.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: secrets[1] });
    expect([b.status, b.body.code]).toEqual([409, 'sso_domain_taken']);
    expect((await owner('PATCH', `${providers()}/00000000-0000-4000-8000-000000000000`, { enabled: false })).status).toBe(404);
    expect(await newEntries()).toEqual([]);
  });

  it('records SAML metadata as digests and fingerprints, and refresh_metadata with whether the certificates changed', async () => {
    const pasted = new TestIdp({ entityId: 'https://idp.pasted.test/saml' });
    const xml = pasted.metadataXml();
    const p = await owner('POST', providers(), { kind: 'saml', name: 'Pasted', domains: ['pasted.test'], metadata_xml: xml });
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    const [create] = await newEntries();
    expect(create).toMatchObject({
      action: 'sso_provider.create',
      resource_id: p.body.id,
      details: { kind: 'saml', metadata_source: 'xml', metadata_sha256: expect.stringMatching(/^[0-9a-f]{64}$/), idp_entity_id: pasted.entityId, signing_certificates: [p.body.idp_signing_certificates[0].sha256_fingerprint] },
    });

    const server = await serveMetadata(new TestIdp({ entityId: 'https://idp.rot.test/saml', publishedKeys: [testKeys.primary] }));
    try {
      const url = `${server.url}?access_token=metadata-url-token-123`;
      const r = await owner('POST', providers(), { kind: 'saml', name: 'Rotating', domains: ['rot.test'], metadata_url: url });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect((await owner('PATCH', `${providers()}/${r.body.id}`, { refresh_metadata: true })).status).toBe(200);
      server.idp = new TestIdp({ entityId: 'https://idp.rot.test/saml', publishedKeys: [testKeys.primary, testKeys.secondary] });
      const rotated = await owner('PATCH', `${providers()}/${r.body.id}`, { refresh_metadata: true });
      expect(rotated.status).toBe(200);
      const [created, same, changed] = await newEntries();
      expect(created).toMatchObject({ action: 'sso_provider.create', details: { metadata_source: 'url', metadata_url: server.url } });
      expect(same).toMatchObject({ action: 'sso_provider.refresh_metadata', resource_id: r.body.id, details: { fields: ['refresh_metadata'], signing_certificates_changed: false } });
      expect(changed).toMatchObject({
        action: 'sso_provider.refresh_metadata',
        details: { signing_certificates_changed: true, signing_certificates: rotated.body.idp_signing_certificates.map((c: { sha256_fingerprint: string }) => c.sha256_fingerprint) },
      });
    } finally {
      await server.stop();
    }

    const text = await allEntriesText();
    expect(text).not.toContain('metadata-url-token-123');
    for (const k of [testKeys.primary, testKeys.secondary]) expect(text).not.toContain(k.certB64.slice(0, 40));
    expect(text).not.toContain('EntityDescriptor');
  });

  it('records user create, ban, unban and delete by id and email domain only', async () => {
    const u = await owner('POST', users(), { email: 'Dana.Private@Corp.test', email_confirm: true, user_metadata: { team: 'crimson-team-value' } });
    expect(u.status).toBe(201);
    expect((await owner('POST', users(), { email: 'dana.private@corp.test' })).body.code).toBe('user_exists');
    expect((await owner('PATCH', `${users()}/${u.body.id}`, { ban_duration: '24h' })).status).toBe(200);
    expect((await owner('PATCH', `${users()}/${u.body.id}`, { ban_duration: 'none' })).status).toBe(200);
    expect((await owner('DELETE', `${users()}/${u.body.id}`)).status).toBe(204);
    expect((await owner('DELETE', `${users()}/${u.body.id}`)).status).toBe(404);

    const [create, ban, unban, del, ...rest] = await newEntries();
    expect(rest).toEqual([]);
    const user = { resource_type: 'user', resource_id: u.body.id };
    expect(create).toMatchObject({ ...user, action: 'user.create', details: { email_domain: 'corp.test', email_confirmed: true, user_metadata_keys: ['team'] } });
    expect(ban).toMatchObject({ ...user, action: 'user.update', details: { fields: ['ban_duration'], ban: 'set', banned_until: expect.any(String), sessions_revoked: 0 } });
    expect(unban).toMatchObject({ ...user, action: 'user.update', details: { ban: 'lifted', banned_until: null } });
    expect(del).toMatchObject({ ...user, action: 'user.delete', details: { email_domain: 'corp.test' } });
    const text = await allEntriesText();
    expect(text.toLowerCase()).not.toContain('dana.private');
    expect(text).not.toContain('crimson-team-value');
  });
});
