// The owner's dashboard in a real browser (test/helpers/dashboard.ts): payload shaping, preview,
// test events and backfills. The webhook form's "Columns sent" and "Body template" (saved as the
// API's columns and template; a bad template refused with the service's message), the webhook's
// page with a preview of a sample row (the rendered body, and why a change would not be sent), a
// test event sent to a real receiver and marked test in the deliveries, and backfills: one of a
// small table followed to done, another paused, resumed and cancelled behind a confirmation. Every
// request the page makes must stay on the service's origin and no Content-Security-Policy violation
// may occur.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../helpers/dashboard.js';
import { eventually } from '../helpers/env.js';
import { Receiver } from '../helpers/receiver.js';

let d: Dashboard;
let db: pg.Client;
const receiver = new Receiver();
let hook: { id: string; name: string };

const TEMPLATE = { text: 'Order {{record.id}} is {{record.status}}', amount: '{{record.amount}}', kind: '{{type}}', table: '{{table}}', test: '{{test}}' };

beforeAll(async () => {
  d = await startDashboard({ roles: ['api', 'dispatcher', 'projector'] });
  await receiver.start();
  db = new pg.Client({ connectionString: d.owner.databaseUrl });
  await db.connect();
  await db.query('create table public.orders (id int primary key, status text not null, amount numeric(10,2), card_number text)');
  await db.query("insert into public.orders values (1, 'open', 10, '4242424242424242'), (2, 'paid', 20.5, '4000056655665556')");
  // backfills: a small table sent to the end, and a larger one sent slowly enough to pause
  await db.query('create table public.items (id int primary key, name text not null)');
  await db.query("insert into public.items select g, 'item ' || g from generate_series(1, 300) g");
  await db.query('create table public.events (id int primary key, name text not null)');
  await db.query("insert into public.events select g, 'event ' || g from generate_series(1, 2000) g");
  await d.signIn();
}, 120_000);

afterAll(async () => {
  await db?.end().catch(() => {});
  await receiver.stop().catch(() => {});
  await d?.stop();
});

const api = (method: string, path: string, body?: unknown) => d.svc.api(d.owner.ownerToken, method, `/v1/projects/${d.owner.ref}${path}`, body);
const bodies = (path: string) => receiver.to(path).map((r) => JSON.parse(r.body));

describe('dashboard: payload shaping, preview, test events and backfills', () => {
  it('creates a webhook with columns and a body template from the form, and shows the refusal of a bad template', async () => {
    const { page, owner } = d;
    await d.open(`/p/${owner.ref}/webhooks`);
    await page.getByText('No webhooks yet').waitFor();
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('shaped orders');
    await form.getByLabel('Table').fill('public.orders');
    await form.getByLabel('URL').fill(`${receiver.url}/orders`);
    await form.getByLabel('Columns sent', { exact: true }).fill('id, status, amount');

    // not JSON: said in the form, nothing sent
    await form.getByLabel('Body template').fill('{"text": Order {{record.id}}}');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await form.getByText('The body template is not JSON').waitFor();
    // an unknown placeholder: the service's 400 invalid_template and its message
    await form.getByLabel('Body template').fill('{"text": "{{recrod.id}}"}');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    let refusal = form.getByRole('alert').filter({ hasText: 'invalid_template' });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('{{recrod.id}} is not a placeholder');
    // a column left out by "Columns sent": 400 column_not_found naming it
    await form.getByLabel('Body template').fill('{"card": "{{record.card_number}}"}');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    refusal = form.getByRole('alert').filter({ hasText: 'column_not_found' });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('"card_number" is not a column');
    expect((await api('GET', '/webhooks')).body).toHaveLength(0);

    await form.getByLabel('Body template').fill(JSON.stringify(TEMPLATE, null, 2));
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByTestId('signing-secret').getByRole('button', { name: 'I have stored it' }).click();
    const [saved] = (await api('GET', '/webhooks')).body;
    expect(saved).toMatchObject({ name: 'shaped orders', table: 'public.orders', columns: ['id', 'status', 'amount'], template: TEMPLATE });
    hook = saved;
    const row = page.getByRole('row').filter({ hasText: 'shaped orders' });
    await row.getByText('custom body template').waitFor();
    expect(await row.textContent()).toContain('columns id, status, amount');

    // the edit form shows both, and clearing "Columns sent" saves null (every column)
    await page.getByRole('button', { name: 'Edit shaped orders' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit shaped orders' });
    expect(await edit.getByLabel('Columns sent', { exact: true }).inputValue()).toBe('id, status, amount');
    expect(JSON.parse(await edit.getByLabel('Body template').inputValue())).toEqual(TEMPLATE);
    await edit.getByLabel('Columns sent', { exact: true }).fill('');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await eventually(async () => ((await api('GET', `/webhooks/${hook.id}`)).body.columns === null ? true : null), 10_000, 'columns cleared');
    expect((await api('GET', `/webhooks/${hook.id}`)).body.template).toEqual(TEMPLATE);
    // and back: the card number never leaves the database
    await page.getByRole('button', { name: 'Edit shaped orders' }).click();
    await page.getByRole('dialog', { name: 'Edit shaped orders' }).getByLabel('Columns sent', { exact: true }).fill('id,status,amount');
    await page.getByRole('dialog', { name: 'Edit shaped orders' }).getByRole('button', { name: 'Save changes' }).click();
    await eventually(async () => ((await api('GET', `/webhooks/${hook.id}`)).body.columns?.length === 3 ? true : null), 10_000, 'columns set again');
    await d.shot('webhooks-shaping');
  });

  it('previews a sample row and the latest row on the webhook page, with the rendered body and why a change would not be sent', async () => {
    const { page, owner } = d;
    await d.open(`/p/${owner.ref}/webhooks`);
    await page.getByRole('link', { name: 'Preview, test and backfill shaped orders' }).click();
    await page.waitForURL(new RegExp(`#/p/${owner.ref}/webhooks/${hook.id}$`));
    const panel = page.getByRole('region', { name: 'Preview and test event' });
    await panel.waitFor();
    expect(await page.locator('dl.facts').first().textContent()).toContain('id, status, amount');

    // a sample INSERT: the template filled from it, typed by the table ("12.5" is numeric 12.50)
    await panel.getByLabel('Event type').selectOption('INSERT');
    await panel.getByLabel('Sample row (record)').fill('{"id": 42, "status": "paid", "amount": "12.5", "card_number": "4111111111111111"}');
    await panel.getByRole('button', { name: 'Preview', exact: true }).click();
    const result = panel.getByTestId('preview-result');
    await result.waitFor();
    expect(await result.textContent()).toContain('would send');
    expect(await result.textContent()).toContain('INSERT of the sample row');
    expect(await result.textContent()).toContain(`POST ${receiver.url}/orders`);
    expect(await result.textContent()).toContain('content-type: application/json');
    const body = JSON.parse((await result.getByLabel('Request body').textContent())!);
    expect(body).toEqual({ text: 'Order 42 is paid', amount: 12.5, kind: 'INSERT', table: 'orders', test: false });
    // pretty-printed, with its size
    expect(await result.getByLabel('Request body').textContent()).toContain('\n  "text": "Order 42 is paid"');
    expect(await result.textContent()).toMatch(/\d+ bytes/);
    await d.shot('webhook-preview');

    // an UPDATE: not among the webhook's events, said as such
    await panel.getByLabel('Event type').selectOption('UPDATE');
    await panel.getByRole('button', { name: 'Preview', exact: true }).click();
    await result.getByText('would not send').waitFor();
    expect(await result.getByRole('list', { name: 'Not sent because' }).textContent()).toContain('UPDATE is not among its events');

    // no sample: the table's latest row
    await panel.getByLabel('Event type').selectOption('INSERT');
    await panel.getByLabel('Sample row (record)').fill('');
    await panel.getByRole('button', { name: 'Preview', exact: true }).click();
    await result.getByText("INSERT of the table's latest row").waitFor();
    expect(JSON.parse((await result.getByLabel('Request body').textContent())!)).toMatchObject({ text: 'Order 2 is paid', amount: 20.5 });

    // a sample with a key that is not a column: the service's invalid_sample
    await panel.getByLabel('Sample row (record)').fill('{"id": 1, "colour": "red"}');
    await panel.getByRole('button', { name: 'Preview', exact: true }).click();
    const refusal = panel.getByRole('alert').filter({ hasText: 'invalid_sample' });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('"colour" is not a column');
  });

  it('sends a test event to the receiver and shows its delivery marked test', async () => {
    const { page, owner } = d;
    await d.open(`/p/${owner.ref}/webhooks/${hook.id}`);
    const panel = page.getByRole('region', { name: 'Preview and test event' });
    await panel.getByLabel('Sample row (record)').fill('{"id": 7, "status": "shipped", "amount": 3, "card_number": "4111111111111111"}');
    await panel.getByRole('button', { name: 'Send test event' }).click();
    const link = panel.getByRole('link', { name: /^Test delivery / });
    await link.waitFor();
    const messageId = (await link.getAttribute('aria-label'))!.replace('Test delivery ', '');

    // the real request, filled from the sample, marked test, without the card number
    await eventually(async () => receiver.to('/orders').length >= 1, 60_000, 'the test event at the receiver');
    const [sent] = bodies('/orders');
    expect(sent).toEqual({ text: 'Order 7 is shipped', amount: 3, kind: 'INSERT', table: 'orders', test: true });
    expect(receiver.to('/orders')[0].headers['webhook-id']).toBe(messageId);
    expect(receiver.to('/orders')[0].body).not.toContain('4111');

    // its page: marked test, delivered (the page follows it until it is)
    await link.click();
    await page.waitForURL(new RegExp(`#/p/${owner.ref}/deliveries/${messageId}$`));
    const facts = page.locator('dl.facts');
    await facts.locator('.badge.test').waitFor();
    await facts.getByText('delivered', { exact: true }).waitFor({ timeout: 30_000 });
    expect(await facts.textContent()).toContain('Test event');
    await d.shot('delivery-test-event');

    // the list: the row of the test delivery carries the marker, a real change's does not
    await db.query("insert into public.orders values (3, 'open', 1, '5555555555554444')");
    const real = await eventually(async () => {
      const r = await api('GET', '/outbox/deliveries?kind=webhook');
      return r.body.deliveries.find((x: { id: string; test: boolean }) => x.id !== messageId && !x.test);
    }, 60_000, 'the real change listed');
    await d.open(`/p/${owner.ref}/deliveries`);
    const testRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: new RegExp(`Delivery ${messageId} .*, test event$`) }) });
    await testRow.waitFor();
    expect(await testRow.locator('.badge.test').count()).toBe(1);
    const realRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: new RegExp(`Delivery ${real.id} `) }) });
    await realRow.waitFor();
    expect(await realRow.locator('.badge.test').count()).toBe(0);

    // a disabled webhook refuses a test event: the service's 409 in the panel
    await api('PATCH', `/webhooks/${hook.id}`, { enabled: false });
    await d.open(`/p/${owner.ref}/webhooks/${hook.id}`);
    expect(await page.getByRole('button', { name: 'Send test event' }).isDisabled()).toBe(true);
    await api('PATCH', `/webhooks/${hook.id}`, { enabled: true });
  });

  it('runs a backfill of a small table to done, and pauses, resumes and cancels another', async () => {
    const { page, owner } = d;
    const items = (await api('POST', '/webhooks', { name: 'items', table: 'public.items', events: ['INSERT'], url: `${receiver.url}/items`, ordering: 'row' })).body;
    expect(items.ordering).toBe('row');
    await d.open(`/p/${owner.ref}/webhooks/${items.id}`);
    const panel = page.getByRole('region', { name: 'Backfills' });
    await panel.getByText('No backfill yet').waitFor();
    await panel.getByLabel('Rate (rows/second)').fill('200');
    await panel.getByRole('button', { name: 'Start backfill' }).click();
    await panel.getByRole('status').filter({ hasText: 'Backfill started: about 300 rows at up to 200 a second' }).waitFor();
    const [started] = (await api('GET', `/webhooks/${items.id}/backfills`)).body;
    expect(started).toMatchObject({ rate: 200, rows_estimated: 300, filter: null });
    const row = panel.locator(`tr[data-backfill="${started.id}"]`);
    // followed by the page (no reload) until it is done
    await row.locator('.badge').filter({ hasText: 'done' }).waitFor({ timeout: 60_000 });
    expect(await row.textContent()).toContain('300 of ~300 rows (100%)');
    expect(await row.textContent()).toMatch(/[\d.]+ rows\/s/);
    const bar = row.getByRole('progressbar', { name: `Progress of backfill ${started.id}` });
    expect(await bar.getAttribute('value')).toBe('300');
    expect(await bar.getAttribute('max')).toBe('300');
    await eventually(async () => new Set(bodies('/items').map((b) => b.record.id)).size === 300, 60_000, 'every item delivered');
    expect(bodies('/items').every((b) => b.type === 'BACKFILL')).toBe(true);
    await d.shot('webhook-backfill-done');

    // a filtered one from the form: only the matching rows
    await panel.getByLabel('Backfill filter').fill('{"id": {"lte": 10}}');
    await panel.getByRole('button', { name: 'Start backfill' }).click();
    await panel.getByRole('status').filter({ hasText: 'about 10 rows' }).waitFor();
    await eventually(async () => (await api('GET', `/webhooks/${items.id}/backfills`)).body[0].state === 'done', 60_000, 'the filtered backfill');
    await panel.locator('tbody tr').first().locator('.badge').filter({ hasText: 'done' }).waitFor({ timeout: 10_000 });
    expect(await panel.locator('tbody tr').first().textContent()).toContain('rows matching {"id":{"lte":10}}');

    // a slow one (5 rows a second): paused, resumed, then cancelled behind a confirmation
    const events = (await api('POST', '/webhooks', { name: 'events', table: 'public.events', events: ['INSERT'], url: `${receiver.url}/events`, ordering: 'row' })).body;
    await d.open(`/p/${owner.ref}/webhooks/${events.id}`);
    await panel.getByText('No backfill yet').waitFor();
    await panel.getByLabel('Rate (rows/second)').fill('5');
    await panel.getByRole('button', { name: 'Start backfill' }).click();
    await panel.getByRole('status').filter({ hasText: 'Backfill started' }).waitFor();
    const [slow] = (await api('GET', `/webhooks/${events.id}/backfills`)).body;
    // another webhook's page started afresh: no filter carried over from the items' page
    expect(slow).toMatchObject({ rate: 5, filter: null, rows_estimated: 2000 });
    const slowRow = panel.locator(`tr[data-backfill="${slow.id}"]`);
    // one under way per webhook: the start button waits (once the page has the new backfill listed)
    await slowRow.waitFor();
    await eventually(async () => panel.getByRole('button', { name: 'Start backfill' }).isDisabled(), 10_000, 'the start button to wait');
    // it makes progress on the page
    await eventually(async () => {
      const text = (await slowRow.locator('.backfill-progress').textContent()) ?? '';
      return /^[1-9][\d,]* of ~2,000 rows/.test(text);
    }, 30_000, 'the slow backfill to move');
    await slowRow.getByRole('button', { name: `Pause backfill ${slow.id}` }).click();
    await slowRow.locator('.badge').filter({ hasText: 'paused' }).waitFor();
    expect((await api('GET', `/webhooks/${events.id}/backfills/${slow.id}`)).body.state).toBe('paused');
    await slowRow.getByRole('button', { name: `Resume backfill ${slow.id}` }).click();
    await slowRow.locator('.badge').filter({ hasText: 'running' }).waitFor();
    await d.shot('webhook-backfill-running');
    await slowRow.getByRole('button', { name: `Cancel backfill ${slow.id}` }).click();
    const confirm = page.getByRole('dialog', { name: 'Cancel this backfill?' });
    // the confirmation's own Cancel leaves it running
    await confirm.getByRole('button', { name: 'Cancel', exact: true }).click();
    expect((await api('GET', `/webhooks/${events.id}/backfills/${slow.id}`)).body.state).toBe('running');
    await slowRow.getByRole('button', { name: `Cancel backfill ${slow.id}` }).click();
    await page.getByRole('dialog', { name: 'Cancel this backfill?' }).getByRole('button', { name: 'Cancel backfill' }).click();
    await slowRow.locator('.badge').filter({ hasText: 'cancelled' }).waitFor();
    const cancelled = (await api('GET', `/webhooks/${events.id}/backfills/${slow.id}`)).body;
    expect(cancelled.state).toBe('cancelled');
    expect(cancelled.rows_done).toBeLessThan(2000);
    expect(await slowRow.getByRole('button').count()).toBe(0);
    expect(await panel.getByRole('button', { name: 'Start backfill' }).isDisabled()).toBe(false);
  });

  it('shows the refusal of a backfill for a webhook not in row order', async () => {
    const { page, owner } = d;
    const loose = (await api('POST', '/webhooks', { name: 'loose items', table: 'public.items', events: ['INSERT'], url: `${receiver.url}/loose`, ordering: 'none' })).body;
    await d.open(`/p/${owner.ref}/webhooks/${loose.id}`);
    const panel = page.getByRole('region', { name: 'Backfills' });
    await panel.getByText('This webhook is not in row order').waitFor();
    await panel.getByRole('button', { name: 'Start backfill' }).click();
    const refusal = panel.getByRole('alert').filter({ hasText: 'backfill_needs_row_ordering' });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('Not started');
    expect((await api('GET', `/webhooks/${loose.id}/backfills`)).body).toEqual([]);
  });

  it('made no request outside the service and broke no CSP rule', () => {
    expect(d.offOrigin).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});
