// The owner's dashboard in a real browser (test/helpers/dashboard.ts): how the page is served, signing
// in and out, plan limits. Every request the page makes must stay on the service's origin and no
// Content-Security-Policy violation may occur. Screenshots go to docs/screenshots/ for the README.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueOwnerToken, revokeOwnerToken } from '../../src/management/projects.js';
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
    await d.shot('overview');
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
