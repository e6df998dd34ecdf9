// The owner's dashboard in a real browser (test/helpers/dashboard.ts): the Capture panel of the
// overview (and its line above the deliveries) against the real connector and its supervisor. A
// project's outbox runs: the panel says it captures changes, with the restarts, slot figures and
// check time the Management API gives. Its database then goes away for real (it stops accepting
// connections and the connector's walsender is cut off, as in connector-supervisor.test.ts): the
// Debezium task fails, and the panel, refreshing by itself, says it waits for the database in the
// warning style. The database comes back: the supervisor restarts the task and the panel says it
// captures again and counts the restart. No request leaves the service's origin and no
// Content-Security-Policy violation occurs.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slotName } from '../../src/outbox/index.js';
import { startDashboard, type Dashboard } from '../helpers/dashboard.js';
import { eventually, stack } from '../helpers/env.js';

let d: Dashboard;
let dbName: string;

const outbox = async () => (await d.svc.api(d.owner.ownerToken, 'GET', `/v1/projects/${d.owner.ref}/outbox`)).body;

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: stack().adminDatabaseUrl });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
const allowConnections = (allow: boolean) => admin((c) => c.query(`alter database ${pg.escapeIdentifier(dbName)} allow_connections ${allow}`));

beforeAll(async () => {
  // the dispatcher role runs the connector supervisor (every CONNECTOR_SUPERVISE_INTERVAL, 5s by default)
  d = await startDashboard({ roles: ['api', 'dispatcher'] });
  dbName = new URL(d.owner.databaseUrl).pathname.slice(1);
  const enabled = await d.svc.api(d.owner.ownerToken, 'POST', `/v1/projects/${d.owner.ref}/outbox/enable`);
  expect(enabled.status).toBe(200);
  await d.signIn();
});

afterAll(async () => {
  if (dbName) await allowConnections(true).catch(() => {});
  await d?.stop();
});

describe('dashboard: the Capture panel against the real connector', () => {
  it('shows a running connector as capturing, with the figures the API gives', async () => {
    const { owner, page } = d;
    const running = await eventually(
      async () => {
        const o = await outbox();
        return o.connector?.supervised_state === 'running' && o.connector.tasks.length > 0 && o.connector.tasks.every((t: { state: string }) => t.state === 'RUNNING') && o.slot?.retained_wal_bytes != null && o;
      },
      120_000,
      'the connector running, as the supervisor records it, and its slot read (every sixth check)',
    );

    await d.open(`/p/${owner.ref}`);
    const panel = page.getByTestId('capture');
    await panel.getByRole('heading', { name: 'Capture' }).waitFor();
    const state = panel.getByTestId('capture-state');
    await state.filter({ hasText: 'Capturing changes.' }).waitFor({ timeout: 30_000 });
    expect(await state.getAttribute('role')).toBe('status');
    expect(await panel.getAttribute('class')).toBe('panel capture');
    expect(await panel.textContent()).toContain(running.connector.name);
    expect(await panel.getByTestId('capture-restarts').textContent()).toBe(String(running.connector.total_restarts));
    expect(await panel.getByTestId('capture-last-restart').textContent()).toBe(
      running.connector.last_restart_at ? await page.evaluate((iso) => new Date(iso).toLocaleString(), running.connector.last_restart_at) : 'never',
    );
    expect(await panel.getByTestId('capture-retained').textContent()).toMatch(/^\d+(\.\d)? (B|kB|MB|GB) kept by the replication slot/);
    expect(await panel.getByTestId('capture-lag').textContent()).toMatch(/^(under a second|\d+(\.\d)? s)/);
    // a slot within max_wal_size (reserved) needs no word; any other status would be explained
    expect(await panel.getByTestId('capture-wal-status').count()).toBe(running.slot.wal_status === 'reserved' ? 0 : 1);
    expect(await page.getByRole('alert').count()).toBe(0);

    // the deliveries say it in one line
    await d.open(`/p/${owner.ref}/deliveries`);
    const line = page.getByTestId('capture-line');
    await line.filter({ hasText: 'Capturing changes.' }).waitFor();
    expect(await line.getAttribute('class')).toBe('capture-line');
  });

  it('shows a task failed while its database is away as waiting for the database, then running again after the supervisor restarted it', async () => {
    const { owner, page, svc } = d;
    const before = (await outbox()).connector.total_restarts as number;
    await d.open(`/p/${owner.ref}`);
    const panel = page.getByTestId('capture');
    const state = panel.getByTestId('capture-state');
    await state.filter({ hasText: 'Capturing changes.' }).waitFor({ timeout: 30_000 });

    // the database stops accepting connections and the connector's walsender is cut off, as in a restart
    await allowConnections(false);
    await admin((c) =>
      c.query('select pg_terminate_backend(active_pid) from pg_replication_slots where slot_name = $1 and active_pid is not null', [slotName(owner.ref, svc.cfg.TOPIC_PREFIX)]),
    );
    const waiting = await eventually(
      async () => {
        const o = await outbox();
        return o.connector?.supervised_state === 'waiting_for_database' && o;
      },
      150_000,
      'the task to fail and the supervisor to wait for the database',
    );
    expect(waiting.connector.tasks).toEqual([{ id: 0, state: 'FAILED' }]);
    expect(waiting.connector.total_restarts).toBe(before); // waiting costs no restart

    // the open page refreshes by itself (every 10 s): no reload
    await state.filter({ hasText: 'Waiting for the database to accept connections.' }).waitFor({ timeout: 30_000 });
    expect(await state.getAttribute('role')).toBe('alert');
    expect(await panel.getAttribute('class')).toBe('panel capture attention');
    expect(await panel.textContent()).toContain('task 0 failed');
    expect(await panel.getByTestId('capture-restarts').textContent()).toBe(String(before));
    // the failure as Connect reported it, behind a disclosure
    await panel.getByText('Last failure as Kafka Connect reported it').click();
    expect(await panel.locator('.capture-failure pre').textContent()).toBe(waiting.connector.last_failure);
    await d.shot('capture-waiting');

    // the deliveries say it too, in the warning style, with a way to the details
    await page.getByRole('link', { name: 'Deliveries', exact: true }).click();
    const line = page.getByTestId('capture-line');
    await line.filter({ hasText: 'Waiting for the database to accept connections.' }).waitFor();
    expect(await line.getAttribute('class')).toBe('capture-line attention');
    await d.shot('capture-deliveries');
    await line.getByRole('link', { name: 'Capture details' }).click();
    await state.filter({ hasText: 'Waiting for the database to accept connections.' }).waitFor();

    // back: the supervisor restarts the task at its next check; the open page follows
    await allowConnections(true);
    await state.filter({ hasText: /Capturing changes( again after a restart)?\./ }).waitFor({ timeout: 90_000 });
    const after = await eventually(
      async () => {
        const o = await outbox();
        return o.connector?.supervised_state === 'running' && o;
      },
      30_000,
      'running in the API',
    );
    expect(after.connector.total_restarts).toBeGreaterThan(before);
    expect(after.connector.last_restart_at).toBeTruthy();
    await state.filter({ hasText: 'Capturing changes.' }).waitFor({ timeout: 30_000 });
    expect(await state.getAttribute('role')).toBe('status');
    expect(await panel.getAttribute('class')).toBe('panel capture');
    await panel.getByTestId('capture-restarts').filter({ hasText: new RegExp(`^${after.connector.total_restarts}\\b`) }).waitFor({ timeout: 30_000 });
    expect(await panel.getByTestId('capture-last-restart').textContent()).toBe(await page.evaluate((iso) => new Date(iso).toLocaleString(), after.connector.last_restart_at));
    await d.shot('capture');
  }, 360_000);

  it('made no request outside the service and no CSP violation', () => {
    expect(d.offOrigin).toEqual([]);
    expect(d.cspViolations).toEqual([]);
  });
});
