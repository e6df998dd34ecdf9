// The owner's dashboard in a real browser (test/helpers/dashboard.ts): endpoint protection. A rate
// limit set and cleared through the webhook form; a circuit opened for real by the pipeline (a
// receiver answering 503, the service's own dispatcher and projector), shown on the webhooks page
// with its held messages and in "Endpoints needing attention"; and a webhook the service disabled
// for real (ENDPOINT_DISABLE_AFTER) shown with its banner, enabled through the page, and the
// replay it offers taken, after which the receiver gets the changes made while it was disabled.
// Two services one after the other: the circuit must stay open (long cool-down) in the first,
// and fail probes quickly until disabled (short cool-down) in the second.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../helpers/dashboard.js';
import { eventually } from '../helpers/env.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';

const call = async (d: Dashboard, method: string, path: string, body?: unknown) => (await d.svc.manage(d.owner, method, path, body)).body;

async function projectDb(d: Dashboard, sql: string) {
  const db = new pg.Client({ connectionString: d.owner.databaseUrl });
  await db.connect();
  try {
    return await db.query(sql);
  } finally {
    await db.end();
  }
}

describe('dashboard: rate limit and an open circuit', () => {
  let d: Dashboard;
  const receiver = new ScriptedReceiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    d = await startDashboard({
      roles: ['api', 'dispatcher', 'projector'],
      // two endpoint faults open a circuit, and it stays open for a minute (no probe meanwhile)
      env: { RETRY_TIME_SCALE: '0.001', CIRCUIT_FAILURE_THRESHOLD: '2', CIRCUIT_COOLDOWN: '60s', CIRCUIT_COOLDOWN_MAX: '120s' },
    });
    await d.signIn();
    await projectDb(d, 'create table public.limited (id serial primary key, note text); create table public.stock (id serial primary key, sku text)');
  });

  afterAll(async () => {
    await d?.stop();
    await receiver.stop().catch(() => {});
  });

  it('sets a rate limit through the form, shows it, and clears it', async () => {
    const { page, owner } = d;
    receiver.script('/limited', { status: 200 });
    await d.open(`/p/${owner.ref}/webhooks`);
    await page.getByText('No webhooks yet').waitFor();
    await page.getByRole('button', { name: 'New webhook' }).click();
    const form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('limited');
    await form.getByLabel('Table').fill('public.limited');
    await form.getByLabel('URL').fill(`${receiver.url}/limited`);
    await form.getByLabel('Rate limit (requests/second)').fill('5');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByTestId('signing-secret').getByRole('button', { name: 'I have stored it' }).click();

    const row = page.getByRole('row').filter({ hasText: 'limited' });
    await row.getByText('Rate limit: 5 requests/second').waitFor();
    const [hook] = await call(d, 'GET', '/webhooks');
    expect(hook).toMatchObject({ name: 'limited', rate_limit: 5, circuit: { state: 'closed', held_messages: 0 } });

    await page.getByRole('button', { name: 'Edit limited' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit limited' });
    expect(await edit.getByLabel('Rate limit (requests/second)').inputValue()).toBe('5');
    await edit.getByLabel('Rate limit (requests/second)').fill('');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Webhook “limited” saved.').waitFor();
    await eventually(async () => (await row.getByText('Rate limit:').count()) === 0, 10_000, 'the rate limit gone from the row');
    expect((await call(d, 'GET', `/webhooks/${hook.id}`)).rate_limit).toBeNull();
    await call(d, 'PATCH', `/webhooks/${hook.id}`, { rate_limit: 20 });
  });

  it('shows a circuit the pipeline opened: its held messages, next probe and last error, and the endpoints needing attention', async () => {
    const { page, owner } = d;
    receiver.script('/down', { status: 503, body: 'down for maintenance' });
    const hook = await call(d, 'POST', '/webhooks', { name: 'inventory', table: 'public.stock', events: ['INSERT'], url: `${receiver.url}/down` });
    await projectDb(d, "insert into public.stock (sku) values ('first')");
    await eventually(async () => (await call(d, 'GET', `/webhooks/${hook.id}`)).circuit.state === 'open', 60_000, 'the circuit to open');
    // changes made while it is open are held, without an attempt
    await projectDb(d, "insert into public.stock (sku) select 'held ' || g from generate_series(1, 5) g");
    // and a base.http_request target host failing too
    await projectDb(d, `select base.http_request('POST', '${receiver.url}/down', '{}'::jsonb, '{"n":1}'::jsonb)`);
    const circuit = await eventually(async () => {
      const c = (await call(d, 'GET', `/webhooks/${hook.id}`)).circuit;
      return c.held_messages >= 5 ? c : null;
    }, 60_000, 'the messages to be held');
    expect(circuit).toMatchObject({ state: 'open', last_error: expect.stringContaining('503') });
    await eventually(async () => {
      const all = (await call(d, 'GET', '/outbox/endpoints')) as { endpoint: string; failures_in_window: number }[];
      return all.some((e) => e.endpoint.startsWith('host:') && e.failures_in_window > 0);
    }, 60_000, 'the host endpoint listed');

    await d.open(`/p/${owner.ref}/webhooks`);
    await page.reload();
    const hooks = page.getByRole('table', { name: 'Webhooks' });
    const row = hooks.getByRole('row').filter({ has: page.getByText('inventory', { exact: true }) });
    await row.getByText('circuit open').waitFor();
    const cell = await row.textContent();
    expect(cell).toMatch(/\b([5-9]|\d\d+) messages held/);
    expect(cell).toContain('next probe at');
    expect(cell).toContain(`Last error: ${circuit.last_error}`);
    expect(cell).toContain('Failing since');
    // the healthy webhook shows nothing special beside its rate limit
    const limited = hooks.getByRole('row').filter({ has: page.getByText('limited', { exact: true }) });
    expect(await limited.textContent()).toContain('Rate limit: 20 requests/second');
    expect(await limited.getByText('circuit open').count()).toBe(0);

    const panel = page.getByRole('table', { name: 'Endpoints needing attention' });
    const listed = panel.getByRole('row').filter({ hasText: 'inventory' });
    await listed.getByText('circuit open').waitFor();
    expect(await listed.textContent()).toContain(circuit.last_error);
    const host = panel.getByRole('row').filter({ hasText: 'base.http_request host' });
    expect(await host.textContent()).toContain('127.0.0.2');
    await d.shot('webhooks-circuit');

    // the deliveries page lists the same endpoints above the deliveries
    await d.open(`/p/${owner.ref}/deliveries`);
    await page.getByRole('table', { name: 'Endpoints needing attention' }).getByText('inventory', { exact: true }).waitFor();
    // nothing reached the receiver while the circuit was open (a minute's cool-down)
    expect(receiver.to('/down').filter((h) => h.body.includes('held ')).length).toBe(0);
  });

  it('made no request outside the service and broke no CSP rule', () => {
    expect(d.offOrigin).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});

describe('dashboard: a webhook the service disabled', () => {
  let d: Dashboard;
  const receiver = new ScriptedReceiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    d = await startDashboard({
      roles: ['api', 'dispatcher', 'projector'],
      // probes fail every 300–600 ms; after 3 s of nothing but failures the webhook is disabled
      env: { RETRY_TIME_SCALE: '0.001', CIRCUIT_FAILURE_THRESHOLD: '2', CIRCUIT_COOLDOWN: '300ms', CIRCUIT_COOLDOWN_MAX: '600ms', ENDPOINT_DISABLE_AFTER: '3s' },
    });
    await d.signIn();
    await projectDb(d, 'create table public.orders (id serial primary key, name text)');
  });

  afterAll(async () => {
    await d?.stop();
    await receiver.stop().catch(() => {});
  });

  it('shows the banner, enables it through the page, and replays what ended while it was disabled', async () => {
    const { page, owner } = d;
    receiver.script('/orders', { status: 502 });
    const hook = await call(d, 'POST', '/webhooks', { name: 'orders-sync', table: 'public.orders', events: ['INSERT'], url: `${receiver.url}/orders` });
    await projectDb(d, "insert into public.orders (name) select 'early ' || g from generate_series(1, 3) g");
    const disabled = await eventually(async () => {
      const w = await call(d, 'GET', `/webhooks/${hook.id}`);
      return w.enabled === false ? w : null;
    }, 90_000, 'the service to disable the webhook');
    expect(disabled.disabled_reason).toBe('failing');

    // changes made while disabled end dead without a request: the offer counts them
    // a dispatcher reads a webhook's configuration through a cache of DELIVERY_CONFIG_TTL (1 s):
    // changes made within that second of the disabling may still be attempted
    await new Promise((r) => setTimeout(r, 1500));
    const sentWhileDisabled = () => receiver.to('/orders').filter((h) => h.body.includes('while disabled')).length;
    await projectDb(d, "insert into public.orders (name) select 'while disabled ' || g from generate_series(1, 3) g");
    const offered = await eventually(async () => {
      const w = await call(d, 'GET', `/webhooks/${hook.id}`);
      return w.replay_offer?.deliveries >= 3 ? w.replay_offer : null;
    }, 60_000, 'the replay offer');
    expect(sentWhileDisabled()).toBe(0);

    await d.open(`/p/${owner.ref}/webhooks`);
    await page.reload();
    const banner = page.getByRole('alert', { name: 'orders-sync disabled by the service' });
    await banner.waitFor();
    const text = await banner.textContent();
    expect(text).toContain(`Disabled by the service on ${await page.evaluate((iso) => new Date(iso).toLocaleString(), disabled.disabled_at)}`);
    expect(text).toContain('its endpoint failed every attempt since');
    expect(text).toMatch(/\((\d+) deliveries so far\)/);
    expect(Number(text!.match(/\((\d+) deliveries so far\)/)![1])).toBeGreaterThanOrEqual(offered.deliveries);
    await page.getByRole('row').filter({ hasText: 'orders-sync' }).getByText('disabled by the service').waitFor();
    await d.shot('webhook-disabled');

    // the endpoint is fixed; the owner enables the webhook and takes the offer
    receiver.script('/orders', { status: 200 });
    await banner.getByRole('button', { name: 'Enable orders-sync' }).click();
    const offer = page.getByRole('region', { name: 'Replay offer for orders-sync' });
    const take = offer.getByRole('button', { name: /^Replay \d+ deliveries that ended while it was disabled$/ });
    await take.waitFor();
    await page.getByText('Webhook “orders-sync” enabled').waitFor();
    await banner.waitFor({ state: 'detached' });
    const n = Number((await take.textContent())!.match(/\d+/)![0]);
    expect(n).toBeGreaterThanOrEqual(3);
    await d.shot('webhook-replay-offer');
    await take.click();
    const outcome = offer.getByText(/\d+ of \d+ matching deliveries were queued again as a new run\./);
    await outcome.waitFor();
    const [replayed, matched] = (await outcome.textContent())!.match(/\d+/g)!.map(Number);
    expect(matched).toBeGreaterThanOrEqual(n);
    expect(replayed).toBe(matched);

    await eventually(async () => {
      const names = receiver.to('/orders').map((h) => JSON.parse(h.body).record.name);
      return [1, 2, 3].every((i) => names.includes(`while disabled ${i}`));
    }, 60_000, 'the receiver to get the changes made while disabled');
    const w = await call(d, 'GET', `/webhooks/${hook.id}`);
    expect(w).toMatchObject({ enabled: true, disabled_reason: null });
    expect(w.replay_offer).toBeUndefined();
  });

  it('made no request outside the service and broke no CSP rule', () => {
    expect(d.offOrigin).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});
