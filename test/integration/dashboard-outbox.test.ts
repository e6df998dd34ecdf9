// The owner's dashboard in a real browser (test/helpers/dashboard.ts): the outbox side. Webhooks and
// their signing secrets, secrets, deliveries to a real receiver (retry, replay), SMTP settings and the
// audit trail of all of it, beside a change an operator made with npm run admin. Every request the
// page makes must stay on the service's origin and no Content-Security-Policy violation may occur.
// Screenshots go to docs/screenshots/ for the README.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordOperatorAudit } from '../../src/projects/audit-log.js';
import { startDashboard, type Dashboard } from '../helpers/dashboard.js';
import { eventually } from '../helpers/env.js';
import { Receiver } from '../helpers/receiver.js';

let d: Dashboard;
const receiver = new Receiver();

beforeAll(async () => {
  d = await startDashboard({ roles: ['api', 'dispatcher', 'projector'] });
  await receiver.start();
  await d.signIn();
});

afterAll(async () => {
  await receiver.stop().catch(() => {});
  await d?.stop();
});

describe('dashboard: webhooks, secrets, deliveries, SMTP and audit', () => {
  it('creates a webhook and shows its signing secret exactly once', async () => {
    const { svc, owner, page } = d;
    const db = new pg.Client({ connectionString: owner.databaseUrl });
    await db.connect();
    await db.query('create table public.orders (id serial primary key, note text)');
    await db.end();

    await d.open(`/p/${owner.ref}/webhooks`);
    await page.getByText('No webhooks yet').waitFor();
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('orders to billing');
    await form.getByLabel('Table').fill('public.orders');
    await form.getByLabel('UPDATE').check();
    await form.getByLabel('Only when these columns change').fill('note');
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
    await d.shot('webhook-secret');

    const listed = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/webhooks`);
    expect(listed.body).toEqual([expect.objectContaining({ name: 'orders to billing', table: 'public.orders', events: ['INSERT', 'UPDATE'], update_columns: ['note'] })]);
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    await box.getByRole('button', { name: 'I have stored it' }).click();
    await page.reload();
    await page.getByRole('cell', { name: 'orders to billing', exact: true }).waitFor();
    expect(await page.content()).not.toContain(secret);
    await page.getByText('INSERT, UPDATE of note').waitFor();
    await d.shot('webhooks');

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

  it('creates a webhook signed with ed25519 (v1a): the public key is listed, no secret is shown, rotation changes it', async () => {
    const { svc, owner, page } = d;
    await d.open(`/p/${owner.ref}/webhooks`);
    await page.getByText('No webhooks yet').waitFor();
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('signed orders');
    await form.getByLabel('Table').fill('public.orders');
    await form.getByLabel('URL').fill('https://billing.example.com/hooks/signed');
    await form.getByLabel('Signature').selectOption('v1a');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByText('Receivers verify its requests with the public key').waitFor();
    expect(await page.getByTestId('signing-secret').count()).toBe(0);

    const [hook] = (await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/webhooks`)).body;
    expect(hook).toMatchObject({ name: 'signed orders', signature_scheme: 'v1a', public_key: expect.stringMatching(/^whpk_/) });
    const shown = page.getByLabel('Public key of signed orders');
    expect(await shown.textContent()).toBe(hook.public_key);

    await page.getByRole('button', { name: 'Rotate the signing secret of signed orders' }).click();
    await page.getByRole('dialog', { name: 'Rotate the signing secret?' }).getByRole('button', { name: 'Rotate' }).click();
    await page.getByText('New key pair for “signed orders”').waitFor();
    const [rotated] = (await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/webhooks`)).body;
    expect(rotated.public_key).not.toBe(hook.public_key);
    await eventually(async () => (await shown.textContent()) === rotated.public_key, 10_000, 'the new public key listed');
    expect(await page.content()).not.toContain('whsk_');

    await page.getByRole('button', { name: 'Delete signed orders' }).click();
    await page.getByRole('dialog', { name: 'Delete this webhook?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No webhooks yet').waitFor();
  });

  it('sets a secret: the name and dates are listed, the value never appears', async () => {
    const { svc, owner, page } = d;
    const value = 'sk_live_value_never_shown_42';
    await d.open(`/p/${owner.ref}/secrets`);
    await page.getByText('No secrets yet').waitFor();
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('BILLING_TOKEN');
    await page.getByRole('textbox', { name: 'Value', exact: true }).fill(value);
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page.getByRole('status').filter({ hasText: 'Secret BILLING_TOKEN saved' }).waitFor();
    await page.getByRole('cell', { name: 'BILLING_TOKEN', exact: true }).waitFor();
    expect(await page.getByRole('textbox', { name: 'Value', exact: true }).inputValue()).toBe('');
    expect(await page.content()).not.toContain(value);
    await d.shot('secrets');

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

  it('shows a dead delivery with its attempts, retries it, and replays the rest after a confirmation', async () => {
    const { svc, owner, page } = d;
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

    // The list's first read (no filter) is held back until the filtered read has answered, so its
    // answer arrives last: it must not put the two dead rows back under "Delivered" (usePager shows
    // only the latest read's answer; CI once saw the race happen on its own)
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((r) => (releaseFirst = r));
    const listPath = `/v1/projects/${owner.ref}/outbox/deliveries`;
    let unfiltered = 0;
    await page.route((u) => u.pathname === listPath, async (route) => {
      const first = !new URL(route.request().url()).searchParams.has('status') && unfiltered++ === 0;
      if (first) await firstHeld;
      await route.continue();
    });
    const firstAnswered = page.waitForResponse((r) => {
      const u = new URL(r.url());
      return u.pathname === listPath && !u.searchParams.has('status');
    });
    await d.open(`/p/${owner.ref}/deliveries`);
    await page.getByLabel('Status').selectOption('delivered');
    await page.getByText('No deliveries match these filters').waitFor();
    releaseFirst();
    await firstAnswered;
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 200))));
    expect(await page.getByText('No deliveries match these filters').count()).toBe(1);
    expect(await page.getByRole('link', { name: new RegExp(`Delivery ${dead[0].id}`) }).count()).toBe(0);
    await page.unroute((u) => u.pathname === listPath);
    await page.getByLabel('Status').selectOption('dead');
    await page.getByLabel('Kind').selectOption('webhook');
    const row = page.getByRole('link', { name: new RegExp(`Delivery ${dead[0].id}`) });
    await row.waitFor();
    await d.shot('deliveries');
    await row.press('Enter');
    await page.getByRole('heading', { name: 'Attempt history' }).waitFor();
    const history = page.getByRole('table', { name: 'Attempts, oldest first' });
    expect(await history.getByRole('row').count()).toBe(2);
    expect(await history.textContent()).toContain('HTTP 410');
    expect(await page.getByText('this endpoint is gone').count()).toBe(1);
    await d.shot('delivery-detail');

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
    await d.shot('replay-confirm');
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

  it('saves SMTP settings with a write-only password, and lists every change in the audit trail', async () => {
    const { svc, owner, page } = d;
    await d.open(`/p/${owner.ref}/smtp`);
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

    // a change made with npm run admin, recorded the way the CLI does: no owner or token, an operator
    await recordOperatorAudit(svc.ctx.db, 'ops@ticket-4711', owner.ref, {
      action: 'project.set_plan',
      resourceType: 'project',
      resourceId: owner.ref,
      details: { from: 'pro', to: 'enterprise' },
    });
    const [byOperator] = (await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/audit?limit=1`)).body;
    expect(byOperator).toMatchObject({ action: 'project.set_plan', actor: { owner_id: null, token_id: null, operator: 'ops@ticket-4711' } });

    await d.open(`/p/${owner.ref}/audit`);
    const trail = page.getByRole('table', { name: 'Audit trail, newest first' });
    await trail.waitFor();
    const text = await trail.textContent();
    for (const action of ['smtp.put', 'secret.create', 'webhook.rotate_secret', 'webhook.create', 'project.set_plan']) expect(text).toContain(action);
    expect(text).not.toContain('smtp-password-never-shown');
    const who = (action: string) => trail.locator('tbody tr').filter({ has: page.getByText(action, { exact: true }) }).first().locator('td').nth(1).textContent();
    expect(await who('project.set_plan')).toBe('operator: ops@ticket-4711');
    expect(await who('smtp.put')).not.toContain('operator');
    await d.shot('audit');
  });

  it('pages the audit trail: older entries are appended until there are none', async () => {
    const { svc, owner, page } = d;
    for (let i = 0; i < 60; i++) await svc.api(owner.ownerToken, 'PUT', `/v1/projects/${owner.ref}/secrets/PAGED_${i}`, { value: 'x' });
    const total = (await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/audit?limit=100`)).body.length;
    expect(total).toBeGreaterThan(50);
    expect(total).toBeLessThan(100);

    await d.open(`/p/${owner.ref}/audit`);
    await page.reload(); // the previous test may have left this page open with fewer entries
    const rows = page.getByRole('table', { name: 'Audit trail, newest first' }).locator('tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(50);
    await page.getByRole('button', { name: 'Load older entries' }).click();
    await eventually(async () => (await rows.count()) === total, 10_000, `all ${total} entries`);
    expect(await page.getByRole('button', { name: 'Load older entries' }).count()).toBe(0);
  });

  it('made no request outside the service and broke no CSP rule', () => {
    expect(d.offOrigin).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});
