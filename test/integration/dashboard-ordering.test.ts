// The owner's dashboard in a real browser (test/helpers/dashboard.ts): ordered delivery. The webhook
// form's Ordering (row order, refused with the service's message for a table without a primary
// key, the service's default when left alone), the webhooks list saying how a webhook is ordered,
// a blocked ordering key on the Blocked keys page with Skip head behind a confirmation, and a
// delivery queued behind its key's head saying so on its page. Every request the page makes must
// stay on the service's origin and no Content-Security-Policy violation may occur.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../helpers/dashboard.js';
import { eventually } from '../helpers/env.js';
import { Receiver } from '../helpers/receiver.js';

let d: Dashboard;
let db: pg.Client;
const receiver = new Receiver();

beforeAll(async () => {
  d = await startDashboard({ roles: ['api', 'dispatcher', 'projector'] });
  await receiver.start();
  receiver.answer('/fail', { status: 503, body: 'down for maintenance' });
  db = new pg.Client({ connectionString: d.owner.databaseUrl });
  await db.connect();
  await db.query('create table public.accounts (id int primary key, balance int)');
  await db.query('create table public.audit_notes (note text)');
  await d.signIn();
}, 120_000);

afterAll(async () => {
  await db?.end().catch(() => {});
  await receiver.stop().catch(() => {});
  await d?.stop();
});

const api = (method: string, path: string, body?: unknown) => d.svc.api(d.owner.ownerToken, method, `/v1/projects/${d.owner.ref}${path}`, body);

describe('dashboard: ordered delivery', () => {
  it('creates a webhook in row order, and shows the refusal for a table without a primary key', async () => {
    const { page, owner } = d;
    await d.open(`/p/${owner.ref}/webhooks`);
    await page.getByText('No webhooks yet').waitFor();

    await page.getByRole('button', { name: 'New webhook' }).click();
    let form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('accounts in order');
    await form.getByLabel('Table').fill('public.accounts');
    await form.getByLabel('URL').fill(`${receiver.url}/accounts`);
    // left alone, the service's default applies; the owner picks row order here
    expect(await form.getByLabel('Ordering').inputValue()).toBe('');
    await form.getByLabel('Ordering').selectOption('row');
    await form.getByText('sent in commit order').waitFor();
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByTestId('signing-secret').getByRole('button', { name: 'I have stored it' }).click();
    const [hook] = (await api('GET', '/webhooks')).body;
    expect(hook).toMatchObject({ name: 'accounts in order', ordering: 'row' });
    await page.getByRole('row').filter({ hasText: 'accounts in order' }).getByText('ordered per row').waitFor();

    // row order on a table without a primary key: the service's 400 and its message, in the form
    await page.getByRole('button', { name: 'New webhook' }).click();
    form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('notes');
    await form.getByLabel('Table').fill('public.audit_notes');
    await form.getByLabel('URL').fill(`${receiver.url}/notes`);
    await form.getByLabel('Ordering').selectOption('row');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    const text = await refusal.textContent();
    expect(text).toContain('Not saved');
    expect(text).toContain('public.audit_notes');
    expect(text).toContain('ordering_needs_primary_key');
    expect((await api('GET', '/webhooks')).body).toHaveLength(1);

    // back to the default: the service picks none for a table without a primary key
    await form.getByLabel('Ordering').selectOption('');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByTestId('signing-secret').getByRole('button', { name: 'I have stored it' }).click();
    await page.getByRole('row').filter({ hasText: 'notes' }).getByText('not ordered').waitFor();
    const notes = (await api('GET', '/webhooks')).body.find((h: { name: string }) => h.name === 'notes');
    expect(notes.ordering).toBe('none');

    // editing shows the current value (no default offered) and saves a change
    await page.getByRole('button', { name: 'Edit accounts in order' }).click();
    form = page.getByRole('dialog', { name: 'Edit accounts in order' });
    expect(await form.getByLabel('Ordering').inputValue()).toBe('row');
    expect(await form.getByLabel('Ordering').locator('option').count()).toBe(2);
    await form.getByLabel('Ordering').selectOption('none');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('row').filter({ hasText: 'accounts in order' }).getByText('not ordered').waitFor();
    expect((await api('GET', `/webhooks/${hook.id}`)).body.ordering).toBe('none');
    await page.getByRole('button', { name: 'Edit accounts in order' }).click();
    form = page.getByRole('dialog', { name: 'Edit accounts in order' });
    await form.getByLabel('Ordering').selectOption('row');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('row').filter({ hasText: 'accounts in order' }).getByText('ordered per row').waitFor();
    await d.shot('webhooks-ordering');
  });

  it('lists a blocked key with its head, shows a queued delivery waiting behind it, and skips the head', async () => {
    const { page, owner } = d;
    await d.open(`/p/${owner.ref}/blocked-keys`);
    await page.getByText('No key is blocked').waitFor();

    // three calls of one key in one transaction, to an endpoint that answers 503
    await db.query('begin');
    for (let n = 1; n <= 3; n++) {
      await db.query(`select base.http_request('POST', $1, '{}'::jsonb, $2::jsonb, ordering_key => 'k1')`, [`${receiver.url}/fail`, JSON.stringify({ n })]);
    }
    await db.query('commit');

    const blocked = await eventually(async () => {
      const r = await api('GET', '/outbox/blocked-keys');
      return r.body.keys?.find((k: { ordering_key: string; queued: number }) => k.ordering_key === 'key:k1' && k.queued === 2);
    }, 90_000, 'key:k1 blocked with 2 queued');
    const row = page.getByRole('row').filter({ hasText: 'key:k1' });
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      return (await row.count()) === 1 && (await row.locator('td').nth(5).textContent()) === '2';
    }, 30_000, 'the page to list key:k1 with 2 queued');
    const head = row.getByRole('link', { name: `Head delivery ${blocked.head.message_id} of key:k1` });
    expect(await head.count()).toBe(1);
    expect(await row.textContent()).toContain('base.http_request');
    expect(await row.textContent()).toContain(`seq ${blocked.head.seq}`);
    await d.shot('blocked-keys');

    // a queued call says what it waits for, in the list and on its page
    const waiting = await eventually(async () => {
      const r = await api('GET', '/outbox/deliveries?status=pending&limit=50');
      return r.body.deliveries.find((x: { ordering_key: string; waiting_for: unknown }) => x.ordering_key === 'key:k1' && x.waiting_for);
    }, 30_000, 'a queued call waiting behind the head');
    expect(waiting.waiting_for.message_id).toBe(blocked.head.message_id);
    await d.open(`/p/${owner.ref}/deliveries/${waiting.id}`);
    const waitingFact = page.locator('dd').filter({ hasText: 'waiting behind' });
    await waitingFact.waitFor();
    expect(await waitingFact.getByRole('link', { name: `head delivery ${blocked.head.message_id}` }).getAttribute('href')).toBe(
      `#/p/${owner.ref}/deliveries/${blocked.head.message_id}`,
    );
    expect(await page.locator('dd').filter({ hasText: 'key:k1' }).textContent()).toContain(`seq ${waiting.seq}`);
    await d.shot('delivery-waiting');
    await d.open(`/p/${owner.ref}/deliveries`);
    await page.getByRole('cell').filter({ hasText: 'waiting behind' }).first().waitFor();

    // skip the head: a confirmation first, then the next call heads the key with one queued
    await d.open(`/p/${owner.ref}/blocked-keys`);
    await row.getByRole('button', { name: 'Skip head of key:k1' }).click();
    const confirm = page.getByRole('dialog', { name: 'Skip the head of this key?' });
    expect(await confirm.textContent()).toContain(blocked.head.message_id);
    await confirm.getByRole('button', { name: 'Skip head' }).click();
    await page.getByRole('status').filter({ hasText: 'Skipped the head of key:k1' }).waitFor();
    await eventually(async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      return (await row.count()) === 1 && (await row.locator('td').nth(5).textContent()) === '1' && (await head.count()) === 0;
    }, 60_000, 'the next call to head key:k1 with 1 queued');
    // the listing is a projection of the event log: the skipped head shows dead a moment later
    const skipped = await eventually(async () => {
      const r = await api('GET', `/outbox/deliveries/${blocked.head.message_id}`);
      return r.body.status === 'dead' && r.body;
    }, 30_000, 'the skipped head to show dead');
    expect(skipped.last_error).toContain('skipped by the owner');
  });

  it('saves a row filter from the form, shows it in the list, and shows the service\'s refusal of a bad one', async () => {
    const { page, owner } = d;
    await d.open(`/p/${owner.ref}/webhooks`);
    await page.getByRole('button', { name: 'New webhook' }).click();
    let form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('rich accounts');
    await form.getByLabel('Table').fill('public.accounts');
    await form.getByLabel('URL').fill(`${receiver.url}/rich`);
    // not JSON: said in the form, nothing sent
    await form.getByLabel('Row filter').fill('{balance > 100}');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await form.getByText('The row filter is not JSON').waitFor();
    // a column the table lacks: the service's 400, naming it
    await form.getByLabel('Row filter').fill('{"wealth": {"gt": 100}}');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await form.getByText('"wealth" is not a column').waitFor();
    await form.getByLabel('Row filter').fill('{"balance": {"gt": 100}}');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByTestId('signing-secret').getByRole('button', { name: 'I have stored it' }).click();
    const hook = ((await api('GET', '/webhooks')).body as any[]).find((h) => h.name === 'rich accounts');
    expect(hook.filter).toEqual({ balance: { gt: 100 } });
    await page.getByRole('row').filter({ hasText: 'rich accounts' }).getByText('only rows matching').waitFor();
    // only the matching row is sent
    await db.query('insert into public.accounts values (901, 50), (902, 500)');
    await eventually(async () => receiver.to('/rich').length === 1, 30_000, 'the one rich account');
    expect(JSON.parse(receiver.to('/rich')[0].body).record.id).toBe(902);
    // cleared in the edit form: every change again
    await page.getByRole('button', { name: 'Edit rich accounts' }).click();
    form = page.getByRole('dialog', { name: 'Edit rich accounts' });
    expect(await form.getByLabel('Row filter').inputValue()).toContain('"gt": 100');
    await form.getByLabel('Row filter').fill('');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await eventually(async () => ((await api('GET', `/webhooks/${hook.id}`)).body.filter === null ? true : null), 10_000, 'the filter cleared');
  });

  it('made no request outside the service and broke no CSP rule', () => {
    expect(d.offOrigin).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});
