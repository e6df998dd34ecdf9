// The owner's dashboard in a real browser (test/helpers/dashboard.ts): how the page is served, signing
// in and out, the access-token signing keys, plan limits. Every request the page makes must stay on
// the service's origin and no Content-Security-Policy violation may occur. Screenshots go to
// docs/screenshots/ for the README.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueOwnerToken, revokeOwnerToken } from '../../src/projects/projects.js';
import { startDashboard, type Dashboard } from '../helpers/dashboard.js';

let d: Dashboard;

beforeAll(async () => {
  d = await startDashboard();
});

afterAll(async () => {
  await d?.stop();
});

describe('dashboard: serving, sign-in and sign-out', () => {
  it('is served with a strict Content-Security-Policy and no inline script', async () => {
    const { svc } = d;
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
    const { svc, owner, page } = d;
    const stranger = await svc.project('free');
    await page.goto(`${svc.url}/dashboard/`);
    await d.shot('sign-in');
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
    await d.shot('projects');

    const stored = await page.evaluate(() => ({ session: JSON.stringify(sessionStorage), local: JSON.stringify(localStorage), url: location.href }));
    expect(stored.session).toContain(owner.ownerToken);
    expect(stored.local).not.toContain(owner.ownerToken);
    expect(stored.url).not.toContain(owner.ownerToken);

    // into the project by keyboard: its overview has what a client SDK needs
    await page.getByRole('link', { name: new RegExp(owner.ref) }).press('Enter');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Project URL' }).inputValue()).toBe(owner.projectUrl);
    expect(await page.getByRole('textbox', { name: 'Anon key' }).inputValue()).toBe(owner.anonKey);
    await page.getByRole('textbox', { name: 'Allowed redirect URLs' }).fill('https://app.example.com/after-sso');
    await page.getByLabel('Allow linking an SSO identity').check();
    await page.getByRole('button', { name: 'Save sign-in settings' }).click();
    await page.getByText('Sign-in settings saved.').waitFor();
    const settings = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}`);
    expect(settings.body.auth).toMatchObject({ additional_redirect_urls: ['https://app.example.com/after-sso'], allow_linking: true, disable_signup: false });

    // the other owner's project is not reachable by its ref either
    await d.open(`/p/${stranger.ref}`);
    await page.getByRole('alert').filter({ hasText: 'project_not_found' }).waitFor();
  });

  it('lists the access-token signing keys and rotates the key after a confirmation', async () => {
    const { svc, owner, page } = d;
    const keysPath = `/v1/projects/${owner.ref}/auth/signing-keys`;
    const before = await svc.api(owner.ownerToken, 'GET', keysPath);
    expect(before.status).toBe(200);
    expect(before.body.keys).toEqual([expect.objectContaining({ status: 'current', valid_until: null })]);
    const oldKid: string = before.body.keys[0].kid;
    const jwksKids = async () =>
      ((await (await fetch(`${owner.projectUrl}/auth/v1/.well-known/jwks.json`, { headers: { apikey: owner.anonKey } })).json()).keys as { kid: string }[]).map((k) => k.kid);

    await d.open(`/p/${owner.ref}`);
    const rows = page.getByRole('table', { name: 'Access-token signing keys' }).locator('tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain(oldKid);
    expect(await rows.first().textContent()).toContain('current');
    expect(await page.getByRole('textbox', { name: 'JWKS URL' }).inputValue()).toBe(`${owner.projectUrl}/auth/v1/.well-known/jwks.json`);

    // the confirmation explains that nobody is signed out; cancelling rotates nothing
    await page.getByRole('button', { name: 'Rotate signing key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rotate the signing key?' });
    await dialog.waitFor();
    const explained = await dialog.textContent();
    expect(explained).toContain('Signed-in users stay signed in');
    expect(explained).toContain(oldKid);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await dialog.count()).toBe(0);
    expect((await svc.api(owner.ownerToken, 'GET', keysPath)).body.keys.map((k: { kid: string }) => k.kid)).toEqual([oldKid]);

    await page.getByRole('button', { name: 'Rotate signing key' }).click();
    await dialog.getByRole('button', { name: 'Rotate' }).click();
    const done = page.getByRole('status').filter({ hasText: 'signs new access tokens from now on' });
    await done.waitFor();
    expect(await dialog.count()).toBe(0);

    // the API has a new current key and keeps the old one as previous; the page shows both, and until when the old one verifies
    const after = await svc.api(owner.ownerToken, 'GET', keysPath);
    const [current, previous] = after.body.keys;
    expect(after.body.keys).toHaveLength(2);
    expect(current).toMatchObject({ status: 'current' });
    expect(current.kid).not.toBe(oldKid);
    expect(previous).toMatchObject({ kid: oldKid, status: 'previous' });
    expect(Date.parse(previous.valid_until)).toBeGreaterThan(Date.now());
    expect(await rows.count()).toBe(2);
    const shownUntil = await page.evaluate((iso: string) => new Date(iso).toLocaleString(), previous.valid_until);
    const [first, second] = [await rows.nth(0).textContent(), await rows.nth(1).textContent()];
    expect(first).toContain(current.kid);
    expect(first).toContain('current');
    expect(second).toContain(oldKid);
    expect(second).toContain('previous');
    expect(second).toContain(shownUntil);
    const said = await done.textContent();
    expect(said).toContain(current.kid);
    expect(said).toContain(shownUntil);
    expect(await jwksKids()).toEqual([current.kid, oldKid]);

    const audit = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/audit`);
    expect(audit.body).toContainEqual(
      expect.objectContaining({ action: 'auth.signing_key.rotate', resource_type: 'signing_key', resource_id: current.kid, details: expect.objectContaining({ previous_kid: oldKid }) }),
    );
    await d.shot('overview');
  });

  it('explains a plan limit instead of showing a form', async () => {
    const { svc, owner, page } = d;
    const free = await svc.project('free', { ownerEmail: `${owner.ref}@owners.test` });
    await d.open(`/p/${free.ref}/sso`);
    await page.getByRole('heading', { name: /Single sign-on \(SSO\) is not part of the free plan/ }).waitFor();
    await d.open(`/p/${free.ref}/smtp`);
    await page.getByRole('heading', { name: /Custom SMTP is not part of the free plan/ }).waitFor();
    expect(await page.getByRole('button', { name: /Save SMTP/ }).count()).toBe(0);
    expect(await page.getByText(`npm run admin -- set-plan --ref ${free.ref} --plan pro`).count()).toBe(1);
    await d.shot('plan-limit');
  });

  it('signs out: the token leaves session storage and project pages ask to sign in again', async () => {
    const { svc, owner, page } = d;
    // a secret the signed-in page lists, so that its absence after sign-out means something
    expect((await svc.api(owner.ownerToken, 'PUT', `/v1/projects/${owner.ref}/secrets/BILLING_TOKEN`, { value: 'x' })).status).toBeLessThan(300);
    await d.open(`/p/${owner.ref}/secrets`);
    await page.getByRole('cell', { name: 'BILLING_TOKEN', exact: true }).waitFor();

    await d.open(`/p/${owner.ref}/webhooks`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(owner.ownerToken);
    await d.open(`/p/${owner.ref}/secrets`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await page.getByText('BILLING_TOKEN').count()).toBe(0);
  });

  it('returns to sign-in with a note when the token is revoked mid-session', async () => {
    const { svc, owner, page } = d;
    const { token } = await issueOwnerToken(svc.ctx, owner.ownerId, 'short-lived');
    await d.signIn(token);
    expect(await revokeOwnerToken(svc.ctx, token)).toBe(true);
    await d.open(`/p/${owner.ref}/secrets`);
    await page.getByText('Your token was refused').waitFor();
    expect(await page.evaluate(() => JSON.stringify(sessionStorage))).not.toContain(token);
  });

  it('made no request outside the service and broke no CSP rule', () => {
    expect(d.offOrigin).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});
