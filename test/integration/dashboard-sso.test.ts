// The owner's dashboard in a real browser (test/helpers/dashboard.ts): the SSO side. OIDC and SAML
// providers against real test IdPs, and the project's users. Every request the page makes must stay
// on the service's origin and no Content-Security-Policy violation may occur. Screenshots go to
// docs/screenshots/ for the README.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidcCallbackUrl } from '../../src/sso/oidc/settings.js';
import { startDashboard, type Dashboard } from '../helpers/dashboard.js';
import { eventually } from '../helpers/env.js';
import { startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';
import { serveMetadata, TestIdp, testKeys } from '../helpers/saml-idp.js';

let d: Dashboard;
let idp: OidcIdp;

beforeAll(async () => {
  d = await startDashboard();
  idp = await startOidcIdp({ redirectUris: [] });
  await d.signIn();
});

afterAll(async () => {
  await idp?.stop();
  await d?.stop();
});

describe('dashboard: SSO providers and users', () => {
  it('adds an OIDC provider against a real IdP, shows its callback URL, tests it, disables it and edits its domains', async () => {
    const { svc, owner, page } = d;
    await d.open(`/p/${owner.ref}/sso`);
    await page.getByText('No SSO providers yet').waitFor();
    await page.getByRole('button', { name: 'Add provider' }).click();
    const form = page.getByRole('dialog', { name: 'Add an SSO provider' });
    await form.getByLabel('OIDC').check();
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('Acme IdP');
    await form.getByRole('textbox', { name: 'Email domains' }).fill('acme.test, acme-corp.test');
    await form.getByRole('textbox', { name: 'Issuer' }).fill(idp.issuer);
    await form.getByRole('textbox', { name: 'Client id' }).fill(idp.clientId);
    await form.getByRole('textbox', { name: 'Client secret' }).fill(idp.clientSecret);
    await form.getByRole('button', { name: 'Add provider' }).click();

    await page.getByRole('heading', { name: /Acme IdP/ }).waitFor();
    const callback = await page.getByRole('textbox', { name: 'Callback URL' }).inputValue();
    // the provider's own redirect URI (oidc/settings.ts): the project's callback path and its id
    const id = /\/sso\/oidc\/callback\/([0-9a-f-]{36})$/.exec(callback)?.[1];
    expect(id, callback).toBeTruthy();
    expect(callback).toBe(oidcCallbackUrl(svc.ctx, { project_ref: owner.ref, id: id! }));
    await page.getByRole('button', { name: /^Test/ }).click();
    const result = page.getByRole('status').filter({ hasText: 'Test passed' });
    await result.waitFor();
    expect(await result.textContent()).toContain(idp.issuer);
    await d.shot('sso-provider');

    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    await page.getByRole('textbox', { name: 'Email domains' }).fill('acme.test');
    await page.getByRole('textbox', { name: 'email', exact: true }).fill('mail');
    await page.getByRole('button', { name: 'Save provider' }).click();
    await page.getByRole('status').filter({ hasText: 'Provider saved' }).waitFor();

    const listed = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/auth/providers/sso`);
    expect(listed.body.items).toEqual([expect.objectContaining({ name: 'Acme IdP', enabled: false, domains: ['acme.test'], attribute_mapping: { email: 'mail' } })]);
    expect(JSON.stringify(listed.body)).not.toContain(idp.clientSecret);

    // a refused save shows the service's message, and the form stays
    await d.open(`/p/${owner.ref}/sso`);
    await page.getByRole('button', { name: 'Add provider' }).click();
    await form.getByRole('textbox', { name: 'Name', exact: true }).fill('Clash');
    await form.getByRole('textbox', { name: 'Email domains' }).fill('acme.test');
    await form.getByRole('textbox', { name: 'Issuer' }).fill(idp.issuer);
    await form.getByRole('textbox', { name: 'Client id' }).fill(idp.clientId);
    await form.getByRole('textbox', { name: 'Client secret' }).fill(idp.clientSecret);
    await form.getByRole('button', { name: 'Add provider' }).click();
    await form.getByRole('alert').filter({ hasText: 'sso_domain_taken' }).waitFor();
    await page.keyboard.press('Escape');
    expect(await form.count()).toBe(0);
  });

  it('adds a SAML provider from its metadata URL, shows what the IdP needs, and trusts a new certificate after a refresh', async () => {
    const { svc, owner, page } = d;
    const entityId = 'https://idp.corp.test/saml';
    const metadata = await serveMetadata(new TestIdp({ entityId, publishedKeys: [testKeys.primary] }));
    try {
      await d.open(`/p/${owner.ref}/sso`);
      await page.getByRole('button', { name: 'Add provider' }).click();
      const form = page.getByRole('dialog', { name: 'Add an SSO provider' });
      await form.getByLabel('SAML 2.0').check();
      await form.getByRole('textbox', { name: 'Name', exact: true }).fill('Corp SAML');
      await form.getByRole('textbox', { name: 'Email domains' }).fill('corp.test');
      await form.getByRole('textbox', { name: 'Metadata URL' }).fill(metadata.url);
      await form.getByRole('button', { name: 'Add provider' }).click();

      await page.getByRole('heading', { name: /Corp SAML/ }).waitFor();
      const listed = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/auth/providers/sso`);
      const saml = listed.body.items.find((p: { name: string }) => p.name === 'Corp SAML');
      expect(await page.getByRole('textbox', { name: 'SP metadata URL' }).inputValue()).toBe(saml.sp_metadata_url);
      expect(await page.getByRole('textbox', { name: 'ACS URL' }).inputValue()).toBe(saml.acs_url);
      expect(await page.getByRole('textbox', { name: 'SP entity ID' }).inputValue()).toBe(saml.sp_entity_id);
      const certs = page.getByRole('table', { name: 'Trusted signing certificates' });
      expect(await certs.getByRole('row').count()).toBe(2);
      expect(await page.getByText(entityId).count()).toBe(1);

      // the IdP publishes a second signing key: the test notices, the refresh trusts it
      metadata.idp = new TestIdp({ entityId, publishedKeys: [testKeys.primary, testKeys.secondary] });
      await page.getByRole('button', { name: /^Test/ }).click();
      await page.getByRole('status').filter({ hasText: 'differs from what is stored' }).waitFor();
      await page.getByRole('button', { name: 'Refresh metadata' }).click();
      await page.getByRole('status').filter({ hasText: 'Metadata re-read' }).waitFor();
      await eventually(async () => (await certs.getByRole('row').count()) === 3, 10_000, 'two trusted certificates');
      await d.shot('sso-saml');
    } finally {
      await metadata.stop();
    }
  });

  it('manages users: create unverified, verify, ban, unban, delete', async () => {
    const { svc, owner, page } = d;
    await d.open(`/p/${owner.ref}/users`);
    await page.getByText('No users yet').waitFor();
    await page.getByRole('textbox', { name: 'Email' }).fill('ada@acme.test');
    await page.getByLabel('Email is verified').uncheck();
    await page.getByRole('button', { name: 'Create user' }).click();
    const row = page.getByRole('row').filter({ hasText: 'ada@acme.test' });
    await row.getByText('unverified').waitFor();
    await row.getByRole('button', { name: 'Verify email' }).click();
    await row.getByText('verified', { exact: true }).waitFor();
    await row.getByRole('button', { name: 'Ban…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Ban ada@acme.test?' });
    await dialog.getByLabel('Ban for').selectOption('7d');
    await dialog.getByRole('button', { name: 'Ban' }).click();
    await row.getByText('banned').waitFor();
    const users = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/auth/users`);
    const ada = users.body.users.find((u: { email: string }) => u.email === 'ada@acme.test');
    expect(new Date(ada.banned_until).getTime()).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    expect(ada.email_confirmed_at).toBeTruthy();
    await row.getByRole('button', { name: 'Unban' }).click();
    await row.getByText('active').waitFor();
    await row.getByRole('button', { name: 'Delete ada@acme.test' }).click();
    await page.getByRole('dialog', { name: 'Delete ada@acme.test?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No users yet').waitFor();
  });

  it('made no request outside the service and broke no CSP rule', () => {
    expect(d.offOrigin).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});
