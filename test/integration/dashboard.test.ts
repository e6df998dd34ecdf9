// The owner's dashboard in a real browser: Debian's Chromium driven by playwright-core, against a
// real service on the shared stack. Every request the page makes must stay on the service's origin
// and no Content-Security-Policy violation may occur. Screenshots go to docs/screenshots/ for the README.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueOwnerToken, revokeOwnerToken } from '../../src/management/projects.js';
import { oidcCallbackUrl } from '../../src/sso/oidc/settings.js';
import { eventually } from '../helpers/env.js';
import { startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';
import { Receiver } from '../helpers/receiver.js';
import { serveMetadata, TestIdp, testKeys } from '../helpers/saml-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

// UPDATE_SCREENSHOTS=1 refreshes the README's pictures; other runs (CI) keep theirs out of the tree.
const SHOTS = process.env.UPDATE_SCREENSHOTS ? join(import.meta.dirname, '../../docs/screenshots') : join(tmpdir(), 'dashboard-screenshots');

let svc: TestService;
let browser: BrowserContext;
let profile: string;
let page: Page;
let owner: TestProject;
let idp: OidcIdp;
const receiver = new Receiver();
const offOrigin: string[] = [];
const cspViolations: string[] = [];

async function shot(name: string) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** The dashboard at a hash route (the session from the sign-in test carries over). */
async function open(route: string) {
  await page.goto(`${svc.url}/dashboard/#${route}`);
}

beforeAll(async () => {
  const built = spawnSync(process.execPath, ['web/ensure-built.mjs'], { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('the dashboard did not build (npm run build:web)');
  svc = await startTestService({ roles: ['api', 'dispatcher', 'projector'] });
  owner = await svc.project('enterprise');
  idp = await startOidcIdp({ redirectUris: [oidcCallbackUrl(svc.ctx, owner.ref)] });
  await receiver.start();
  profile = mkdtempSync(join(tmpdir(), 'dashboard-chromium-'));
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 860 },
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  const origin = new URL(svc.url).origin;
  page.on('request', (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) offOrigin.push(r.url());
  });
  page.on('console', (m) => {
    if (/Content.Security.Policy/i.test(m.text())) cspViolations.push(m.text());
  });
});

afterAll(async () => {
  await browser?.close();
  await idp?.stop();
  await receiver.stop().catch(() => {});
  if (profile) rmSync(profile, { recursive: true, force: true });
  await svc?.stop();
});

describe('dashboard', () => {
  it('is served with a strict Content-Security-Policy and no inline script', async () => {
    const res = await fetch(`${svc.url}/dashboard/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    const html = await res.text();
    expect(html).toMatch(/<script type="module" crossorigin src="\.\/assets\/[\w-]+\.js"><\/script>/);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const paths = Object.keys((await svc.api(null, 'GET', '/openapi.json')).body.paths);
    expect(paths.filter((p) => p.startsWith('/dashboard'))).toEqual([]);
    const bare = await fetch(`${svc.url}/dashboard`, { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/dashboard/');
  });

  it('signs in with an owner token by keyboard, keeps it in session storage only, and lists only that owner’s projects', async () => {
    const stranger = await svc.project('free');
    await page.goto(`${svc.url}/dashboard/`);
    await shot('sign-in');
    const input = page.getByLabel('Owner token');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('owner-token');
    await page.keyboard.type('not-a-real-token-123');
    await page.keyboard.press('Enter');
    const refused = page.getByRole('alert').filter({ hasText: 'Sign-in failed' });
    await refused.waitFor();
    expect(await refused.textContent()).toContain('unauthorized');
    expect(await page.getByRole('alert').count()).toBe(1);

    await input.fill(owner.ownerToken);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Your projects' }).waitFor();
    await page.getByRole('link', { name: new RegExp(owner.ref) }).waitFor();
    expect(await page.getByText(stranger.ref).count()).toBe(0);
    await shot('projects');

    const stored = await page.evaluate(() => ({ session: JSON.stringify(sessionStorage), local: JSON.stringify(localStorage), url: location.href }));
    expect(stored.session).toContain(owner.ownerToken);
    expect(stored.local).not.toContain(owner.ownerToken);
    expect(stored.url).not.toContain(owner.ownerToken);

    // into the project by keyboard: its overview has what a client SDK needs
    await page.getByRole('link', { name: new RegExp(owner.ref) }).press('Enter');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Project URL' }).inputValue()).toBe(owner.projectUrl);
    expect(await page.getByRole('textbox', { name: 'Anon key' }).inputValue()).toBe(owner.anonKey);
    await shot('overview');
    await page.getByRole('textbox', { name: 'Allowed redirect URLs' }).fill('https://app.example.com/after-sso');
    await page.getByLabel('Allow linking an SSO identity').check();
    await page.getByRole('button', { name: 'Save sign-in settings' }).click();
    await page.getByText('Sign-in settings saved.').waitFor();
    const settings = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}`);
    expect(settings.body.auth).toMatchObject({ additional_redirect_urls: ['https://app.example.com/after-sso'], allow_linking: true, disable_signup: false });

    // the other owner's project is not reachable by its ref either
    await open(`/p/${stranger.ref}`);
    await page.getByRole('alert').filter({ hasText: 'project_not_found' }).waitFor();
  });

  it('creates a webhook and shows its signing secret exactly once', async () => {
    const db = new pg.Client({ connectionString: owner.databaseUrl });
    await db.connect();
    await db.query('create table public.orders (id serial primary key, note text)');
    await db.end();

    await open(`/p/${owner.ref}/webhooks`);
    await page.getByText('No webhooks yet').waitFor();
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('orders to billing');
    await form.getByLabel('Table').fill('public.orders');
    await form.getByLabel('UPDATE').check();
    await form.getByLabel('URL').fill('https://billing.example.com/hooks/orders');
    await form.getByLabel('Headers').fill('Authorization: Bearer {{secret:BILLING_TOKEN}}');
    await form.getByRole('button', { name: 'Create webhook' }).click();

    const box = page.getByTestId('signing-secret');
    await box.waitFor();
    expect(await box.textContent()).toContain('This is the only time it is shown');
    const secret = await box.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32,}$/);
    await box.getByRole('button', { name: 'Copy Signing secret' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await shot('webhook-secret');

    const listed = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/webhooks`);
    expect(listed.body).toEqual([expect.objectContaining({ name: 'orders to billing', table: 'public.orders', events: ['INSERT', 'UPDATE'] })]);
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    await box.getByRole('button', { name: 'I have stored it' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'orders to billing', exact: true }).waitFor();
    expect(await page.content()).not.toContain(secret);
    await shot('webhooks');

    // rotation asks first, then shows the new secret once and says how long the old one still signs
    await page.getByRole('button', { name: 'Rotate the signing secret of orders to billing' }).click();
    await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate' }).click();
    const rotated = page.getByTestId('signing-secret');
    await rotated.getByText('New signing secret').waitFor();
    const next = await rotated.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(next).toMatch(/^whsec_/);
    expect(next).not.toBe(secret);
    expect(await rotated.textContent()).toContain('both the previous and the new secret');
    await rotated.getByRole('button', { name: 'I have stored it' }).click();

    // deleting asks first; the list is then empty again
    await page.getByRole('button', { name: 'Delete orders to billing' }).click();
    await page.getByRole('dialog', { name: 'Delete this webhook?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No webhooks yet').waitFor();
    expect((await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/webhooks`)).body).toEqual([]);
  });

  it('sets a secret: the name and dates are listed, the value never appears', async () => {
    const value = 'sk_live_value_never_shown_42';
    await open(`/p/${owner.ref}/secrets`);
    await page.getByText('No secrets yet').waitFor();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('BILLING_TOKEN');
    await page.getByRole('textbox', { name: 'Value', exact: true }).fill(value);
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page.getByRole('status').filter({ hasText: 'Secret BILLING_TOKEN saved' }).waitFor();
    await page.getByRole('cell', { name: 'BILLING_TOKEN', exact: true }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Value', exact: true }).inputValue()).toBe('');
    expect(await page.content()).not.toContain(value);
    await shot('secrets');

    const listed = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/secrets`);
    expect(listed.body).toEqual([expect.objectContaining({ name: 'BILLING_TOKEN' })]);

    // an invalid name is explained before anything is sent
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('9lives');
    expect(await page.getByRole('button', { name: 'Save secret' }).isDisabled()).toBe(true);

    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('OLD_TOKEN');
    await page.getByRole('textbox', { name: 'Value', exact: true }).fill('old');
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page.getByRole('button', { name: 'Delete OLD_TOKEN' }).click();
    await page.getByRole('dialog', { name: 'Delete OLD_TOKEN?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('status').filter({ hasText: 'Secret OLD_TOKEN deleted' }).waitFor();
    const left = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/secrets`);
    expect(left.body.map((x: { name: string }) => x.name)).toEqual(['BILLING_TOKEN']);
  });

  it('adds an OIDC provider against a real IdP, shows its callback URL, tests it, disables it and edits its domains', async () => {
    await open(`/p/${owner.ref}/sso`);
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
    expect(callback).toBe(oidcCallbackUrl(svc.ctx, owner.ref));
    await page.getByRole('button', { name: /^Test/ }).click();
    const result = page.getByRole('status').filter({ hasText: 'Test passed' });
    await result.waitFor();
    expect(await result.textContent()).toContain(idp.issuer);
    await shot('sso-provider');

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
    await open(`/p/${owner.ref}/sso`);
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
    const entityId = 'https://idp.corp.test/saml';
    const metadata = await serveMetadata(new TestIdp({ entityId, publishedKeys: [testKeys.primary] }));
    try {
      await open(`/p/${owner.ref}/sso`);
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
      await shot('sso-saml');
    } finally {
      await metadata.stop();
    }
  });

  it('shows a dead delivery with its attempts, retries it, and replays the rest after a confirmation', async () => {
    const db = new pg.Client({ connectionString: owner.databaseUrl });
    await db.connect();
    await db.query('create table public.payments (id serial primary key, amount int)');
    receiver.answer('/gone', { status: 410, body: 'this endpoint is gone' });
    const hook = await svc.api(owner.ownerToken, 'POST', `/v1/projects/${owner.ref}/webhooks`, { name: 'payments', table: 'public.payments', events: ['INSERT'], url: `${receiver.url}/gone` });
    expect(hook.status).toBe(201);
    await db.query('insert into public.payments (amount) values (42), (43)');
    await db.end();
    const dead = await eventually(async () => {
      const r = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/outbox/deliveries?status=dead`);
      return r.body.deliveries?.length === 2 && r.body.deliveries;
    }, 90_000, 'both deliveries to end dead');

    await open(`/p/${owner.ref}/deliveries`);
    await page.getByLabel('Status').selectOption('delivered');
    await page.getByText('No deliveries match these filters').waitFor();
    await page.getByLabel('Status').selectOption('dead');
    await page.getByLabel('Kind').selectOption('webhook');
    const row = page.getByRole('link', { name: new RegExp(`Delivery ${dead[0].id}`) });
    await row.waitFor();
    await shot('deliveries');
    await row.press('Enter');
    await page.getByRole('heading', { name: 'Attempt history' }).waitFor();
    const history = page.getByRole('table', { name: 'Attempts, oldest first' });
    expect(await history.getByRole('row').count()).toBe(2);
    expect(await history.textContent()).toContain('HTTP 410');
    expect(await page.getByText('this endpoint is gone').count()).toBe(1);
    await shot('delivery-detail');

    // the target is fixed: retry this one from its page and watch it arrive
    receiver.answer('/gone', { status: 200, body: 'thanks' });
    await page.getByRole('button', { name: 'Retry now' }).click();
    await page.getByRole('status').filter({ hasText: 'Queued again as run 2' }).waitFor();
    await eventually(async () => {
      const r = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/outbox/deliveries/${dead[0].id}`);
      if (r.body.status !== 'delivered') throw new Error(`status ${r.body.status}, run ${r.body.run}, last error ${r.body.last_error}`);
      return true;
    }, 60_000, 'the retried delivery to be delivered');
    // the page follows the pending delivery by itself
    await page.locator('dd .badge', { hasText: 'delivered' }).waitFor();
    expect(await history.textContent()).toContain('delivered');
    expect(receiver.byWebhookId(dead[0].id).length).toBe(2);

    // and the other one through "Replay many", which asks before sending
    await page.getByRole('link', { name: '← All deliveries' }).click();
    await page.getByRole('button', { name: 'Replay many…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replay deliveries' });
    await dialog.getByRole('button', { name: 'Review replay' }).click();
    await dialog.getByText('will be sent again to its target').waitFor();
    await shot('replay-confirm');
    await dialog.getByRole('button', { name: 'Replay now' }).click();
    await dialog.getByText('1 of 1 matching delivery was queued again').waitFor();
    await dialog.getByRole('button', { name: 'Close' }).first().click();
    await eventually(async () => {
      const r = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/outbox/deliveries/${dead[1].id}`);
      if (r.body.status !== 'delivered') throw new Error(`status ${r.body.status}, run ${r.body.run}, last error ${r.body.last_error}`);
      return true;
    }, 60_000, 'the replayed delivery to be delivered');
    expect(receiver.byWebhookId(dead[1].id).length).toBe(2);
  });

  it('manages users: create unverified, verify, ban, unban, delete', async () => {
    await open(`/p/${owner.ref}/users`);
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

  it('saves SMTP settings with a write-only password, and lists every change in the audit trail', async () => {
    await open(`/p/${owner.ref}/smtp`);
    await page.getByText('No SMTP server configured yet').waitFor();
    await page.getByRole('textbox', { name: 'Host' }).fill('smtp.example.com');
    await page.getByRole('textbox', { name: 'User' }).fill('mailer');
    await page.getByRole('textbox', { name: 'Password' }).fill('smtp-password-never-shown');
    await page.getByRole('textbox', { name: 'Sender address' }).fill('no-reply@example.com');
    await page.getByRole('button', { name: 'Save SMTP settings' }).click();
    await page.getByText('A password is stored.').waitFor();
    expect(await page.getByRole('textbox', { name: 'Password' }).inputValue()).toBe('');
    expect(await page.content()).not.toContain('smtp-password-never-shown');
    const smtp = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/smtp`);
    expect(smtp.body).toMatchObject({ host: 'smtp.example.com', user: 'mailer', password_set: true, sender_email: 'no-reply@example.com', tls_mode: 'starttls' });

    await open(`/p/${owner.ref}/audit`);
    const trail = page.getByRole('table', { name: 'Audit trail, newest first' });
    await trail.waitFor();
    const text = await trail.textContent();
    for (const action of ['smtp.put', 'secret.create', 'webhook.rotate_secret', 'webhook.create']) expect(text).toContain(action);
    expect(text).not.toContain('smtp-password-never-shown');
    await shot('audit');
  });

  it('explains a plan limit instead of showing a form', async () => {
    const free = await svc.project('free', { ownerEmail: `${owner.ref}@owners.test` });
    await open(`/p/${free.ref}/sso`);
    await page.getByRole('heading', { name: /Single sign-on \(SSO\) is not part of the free plan/ }).waitFor();
    await open(`/p/${free.ref}/smtp`);
    await page.getByRole('heading', { name: /Custom SMTP is not part of the free plan/ }).waitFor();
    expect(await page.getByRole('button', { name: /Save SMTP/ }).count()).toBe(0);
    expect(await page.getByText(`npm run admin -- set-plan --ref ${free.ref} --plan pro`).count()).toBe(1);
    await shot('plan-limit');
  });

  it('signs out: the token leaves session storage and project pages ask to sign in again', async () => {
    await open(`/p/${owner.ref}/webhooks`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(owner.ownerToken);
    await open(`/p/${owner.ref}/secrets`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.getByText('BILLING_TOKEN').count()).toBe(0);
  });

  it('returns to sign-in with a note when the token is revoked mid-session', async () => {
    const { token } = await issueOwnerToken(svc.ctx, owner.ownerId, 'short-lived');
    await page.goto(`${svc.url}/dashboard/`);
    await page.getByLabel('Owner token').fill(token);
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: new RegExp(owner.ref) }).waitFor();
    expect(await revokeOwnerToken(svc.ctx, token)).toBe(true);
    await open(`/p/${owner.ref}/secrets`);
    await page.getByText('Your token was refused').waitFor();
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(token);
  });

  it('made no request outside the service and broke no CSP rule', () => {
    expect(offOrigin).toEqual([]);
    expect(cspViolations).toEqual([]);
  });
});
