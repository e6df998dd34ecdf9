// The SSO setup page (web/sso-setup.html) in a real browser (test/helpers/dashboard.ts), as the
// customer's IT admin uses it: a setup link made by the owner is taken to an active SAML provider
// against the suite's SAML IdP behind a real HTTP server (with one failed test sign-in whose
// explanation is asserted), and to an active OIDC provider against a real oidc-provider. Also: the
// clear pages of used and revoked links, and metadata and attribute values that try to inject HTML.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidcCallbackUrl } from '../../src/sso/oidc/settings.js';
import { startDashboard, type Dashboard } from '../helpers/dashboard.js';
import { startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';
import { TestIdp } from '../helpers/saml-idp.js';
import { startSamlIdpServer, type SamlIdpServer } from '../helpers/saml-idp-server.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp-server.js';

let d: Dashboard;
let saml: SamlIdpServer;
let oidc: OidcIdp;
let smtp: TestSmtpServer;
// metadata an attacker (or a careless IdP) controls: the page must show it as text
const HOSTILE_ENTITY = 'https://idp.acme.test/"><img src=x onerror="window.__xss=1">';
const HOSTILE_NAME = '<img src=x onerror="window.__xss=2">Ann';

beforeAll(async () => {
  smtp = await startSmtpServer();
  d = await startDashboard({ env: { SMTP_URL: smtp.url } });
  saml = await startSamlIdpServer((ssoUrl) => new TestIdp({ entityId: HOSTILE_ENTITY, ssoRedirectUrl: ssoUrl }), { nameId: 'ann@acme.test' });
  oidc = await startOidcIdp({ redirectUris: [] });
  oidc.setAccount('bob', { email: 'bob@globex.test', email_verified: true, name: 'Bob' });
  d.page.on('dialog', (dialog) => void dialog.accept());
});

afterAll(async () => {
  await oidc?.stop();
  await saml?.stop();
  await d?.stop();
  await smtp?.close();
});

const makeLink = async (body: Record<string, unknown>) => {
  const r = await d.svc.api(d.owner.ownerToken, 'POST', `/v1/projects/${d.owner.ref}/auth/sso/setup-links`, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body as { id: string; url: string; provider_id: string };
};
const provider = async (id: string) => (await d.svc.api(d.owner.ownerToken, 'GET', `/v1/projects/${d.owner.ref}/auth/providers/sso/${id}`)).body;

describe('SSO setup page', () => {
  it('takes a link to an active SAML provider: values to enter, metadata, a failed test explained, a passing test, activation', async () => {
    const { page } = d;
    // the owner makes the link in the dashboard; its URL is shown once
    await d.signIn();
    await d.open(`/p/${d.owner.ref}/sso`);
    await page.getByRole('textbox', { name: 'Domains for the link' }).fill('acme.test');
    await page.getByRole('button', { name: 'Create setup link' }).click();
    const url = await page.getByRole('textbox', { name: 'Setup link' }).inputValue();
    const listed = (await d.svc.api(d.owner.ownerToken, 'GET', `/v1/projects/${d.owner.ref}/auth/sso/setup-links`)).body.items;
    expect(listed).toEqual([expect.objectContaining({ domains: ['acme.test'], kind: 'any', state: 'active' })]);
    expect(JSON.stringify(listed)).not.toContain(new URL(url).hash.slice(1));
    await page.getByRole('button', { name: 'I have sent it' }).click();
    expect(await page.getByRole('textbox', { name: 'Setup link' }).count()).toBe(0);
    const link = { url, provider_id: listed[0].provider_id as string };
    await page.goto(link.url);
    await page.getByRole('heading', { name: 'Set up single sign-on for acme.test' }).waitFor();
    // the secret left the address bar at once (it stays in this tab's sessionStorage only)
    expect(page.url()).toBe(`${d.svc.url}/dashboard/sso-setup.html`);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);

    const acs = await page.getByRole('textbox', { name: /^ACS URL/ }).inputValue();
    expect(acs).toBe(`${d.owner.projectUrl}/auth/v1/sso/saml/acs/${link.provider_id}`);
    expect(await page.getByRole('textbox', { name: /^SP entity ID/ }).inputValue()).toBe(`${d.owner.projectUrl}/auth/v1/sso/saml/metadata/${link.provider_id}`);
    expect(await page.getByRole('textbox', { name: 'NameID format' }).inputValue()).toBe('urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress');

    await page.getByRole('textbox', { name: 'IdP metadata URL' }).fill(saml.metadataUrl);
    await page.getByRole('textbox', { name: 'Extra attributes' }).fill('department=department');
    await page.getByRole('button', { name: 'Save IdP settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    // the hostile entity ID is on the page as text, and made no element
    await page.getByText(HOSTILE_ENTITY).waitFor();
    expect(await provider(link.provider_id)).toMatchObject({ enabled: false, draft: true, idp_entity_id: HOSTILE_ENTITY });
    expect(await page.getByRole('button', { name: 'Activate single sign-on' }).isDisabled()).toBe(true);

    // a test sign-in that fails: the IdP names another audience
    saml.answer = { nameId: 'ann@acme.test', audience: 'https://some-other-app.test/sp' };
    await page.getByRole('button', { name: 'Test sign-in' }).click();
    await page.getByRole('heading', { name: 'Test IdP' }).waitFor();
    await page.getByRole('button', { name: 'Continue' }).click();
    const failed = page.getByRole('alert').filter({ hasText: 'Test sign-in failed' });
    await failed.waitFor();
    expect(await failed.textContent()).toContain('The assertion is meant for another service (audience).');
    expect(await failed.textContent()).toContain(`Audience URI (SP Entity ID)" / "Identifier" of the application at your IdP to exactly ${d.owner.projectUrl}/auth/v1/sso/saml/metadata/${link.provider_id}`);
    expect(page.url()).toBe(`${d.svc.url}/dashboard/sso-setup.html`);
    expect(await page.getByRole('button', { name: 'Activate single sign-on' }).isDisabled()).toBe(true);
    expect(await failed.getByText('The settings changed after this test').count()).toBe(0);
    await d.shot('sso-setup-failed-test');

    // the IdP is fixed: the test passes and shows what came back, as text
    saml.answer = { nameId: 'ann@acme.test', attributes: { displayName: [HOSTILE_NAME], department: ['R&D'] } };
    await page.getByRole('button', { name: 'Test sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    const passed = page.getByRole('status').filter({ hasText: 'Test sign-in passed' });
    await passed.waitFor();
    const shown = page.getByRole('table', { name: 'What the IdP sent' });
    expect(await shown.getByRole('row', { name: /Email/ }).textContent()).toContain('ann@acme.test');
    expect(await shown.getByRole('row', { name: /department \(mapped\)/ }).textContent()).toContain('R&D');
    expect(await shown.getByRole('row', { name: /^Name/ }).textContent()).toContain(HOSTILE_NAME);
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    await d.shot('sso-setup');

    await page.getByRole('button', { name: 'Activate single sign-on' }).click();
    await page.getByRole('heading', { name: 'Single sign-on is active' }).waitFor();
    expect(await page.getByRole('status').textContent()).toContain('The owner of the service has been notified by email.');
    expect(await provider(link.provider_id)).toMatchObject({ enabled: true, draft: false, domains: ['acme.test'] });
    const notice = smtp.received.find((m) => m.subject === 'SSO provider activated for acme.test');
    expect(notice?.to).toEqual([`${d.owner.ref}@owners.test`]);

    // the owner's list says the link is used, and the provider is live
    await d.open(`/p/${d.owner.ref}/sso`);
    await page.getByRole('row', { name: /acme\.test/ }).getByText('used').waitFor();
    // the same link again: a clear page, no form
    await page.goto(link.url);
    await page.getByRole('heading', { name: 'This setup link was already used' }).waitFor();
    expect(await page.getByText('sso_setup_link_gone').count()).toBe(1);
    expect(await page.getByRole('button').count()).toBe(0);
  });

  it('takes a link to an active OIDC provider against a real oidc-provider; the client secret is never shown', async () => {
    const { page } = d;
    const link = await makeLink({ domains: ['globex.test'], kind: 'oidc' });
    await page.goto(link.url);
    // the link's provider's own redirect URI, which the admin registers at the IdP
    const redirectUri = oidcCallbackUrl(d.svc.ctx, { project_ref: d.owner.ref, id: link.provider_id });
    expect(await page.getByRole('textbox', { name: 'Redirect URI' }).inputValue()).toBe(redirectUri);
    oidc.allowRedirect(redirectUri);
    await page.getByRole('textbox', { name: 'Issuer' }).fill(oidc.issuer);
    await page.getByRole('textbox', { name: 'Client ID' }).fill(oidc.clientId);
    await page.getByLabel('Client secret').fill(oidc.clientSecret);
    await page.getByRole('button', { name: 'Save IdP settings' }).click();
    await page.getByText('stored (write-only)').waitFor();
    expect(await page.getByLabel('Client secret').inputValue()).toBe('');
    expect(await page.content()).not.toContain(oidc.clientSecret);

    await page.getByRole('button', { name: 'Test sign-in' }).click();
    await page.locator('input[name="login"]').fill('bob');
    await page.locator('input[name="password"]').fill('any');
    await page.locator('button[type="submit"]').click();
    // consent, when the IdP asks for it
    const passed = page.getByRole('status').filter({ hasText: 'Test sign-in passed' });
    await Promise.race([passed.waitFor(), page.locator('button[type="submit"]').click({ timeout: 10_000 }).catch(() => {})]);
    await passed.waitFor();
    expect(await page.getByRole('table', { name: 'What the IdP sent' }).textContent()).toContain('bob@globex.test');
    await page.getByRole('button', { name: 'Activate single sign-on' }).click();
    await page.getByRole('heading', { name: 'Single sign-on is active' }).waitFor();
    expect(await provider(link.provider_id)).toMatchObject({ kind: 'oidc', enabled: true, draft: false, domains: ['globex.test'] });
  });

  it('shows a clear page for a revoked link and for a page opened without one', async () => {
    const { page } = d;
    const link = await makeLink({ domains: ['initech.test'] });
    await d.svc.api(d.owner.ownerToken, 'DELETE', `/v1/projects/${d.owner.ref}/auth/sso/setup-links/${link.id}`);
    await page.goto(link.url);
    await page.getByRole('heading', { name: 'This setup link was revoked' }).waitFor();
    expect(await page.content()).not.toMatch(/\bat \S+ \(|Error:/);
    await page.evaluate(() => sessionStorage.clear());
    await page.goto(`${d.svc.url}/dashboard/sso-setup.html`);
    await page.getByRole('heading', { name: 'This page needs the whole setup link' }).waitFor();
  });

  it('made no request off the service and the two IdPs, and no CSP violation', () => {
    // the IdPs' own pages: oidc-provider's development login page asks for a Google font (the
    // closed test network refuses it); nothing of ours goes anywhere else
    const allowed = [new URL(saml.url).origin, new URL(oidc.url).origin, 'https://fonts.googleapis.com'];
    expect(d.offOrigin.filter((u) => !allowed.includes(new URL(u).origin))).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});
