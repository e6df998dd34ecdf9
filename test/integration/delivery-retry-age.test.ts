// The 24 h age limit with the clock scaled (RETRY_TIME_SCALE 0.00005: 24 h → 4.32 s). A ladder of
// 5 h steps reaches 24 h before 8 attempts, so a target that always fails ends dead by age; and a
// message taken only after its 24 h (the dispatcher was down) ends dead without a request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';
import { readTopic } from '../helpers/delivery-tools.js';

const SCALE = 0.00005;
const STEP = 5 * 3_600_000;
const AGE = 24 * 3_600_000;

describe('the age budget', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let dispatcher: Worker[] = [];
  let projector: Worker[] = [];
  const receiver = new ScriptedReceiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    const env = { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', RETRY_TIME_SCALE: String(SCALE), RETRY_DELAYS: Array(7).fill('5h').join(',') };
    svc = await startTestService({ roles: ['api'], env });
    projector = await startWorkers(svc.ctx, ['projector']);
    dispatcher = await startWorkers(svc.ctx, ['dispatcher']);
    project = await svc.project('pro');
    expect((await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/enable`)).status).toBeLessThan(300);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await Promise.all([...dispatcher, ...projector].map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const enqueue = async (path: string) =>
    (await db.query(`select base.http_request('GET', $1, '{}'::jsonb, null, null, 2000) as id`, [`${receiver.url}${path}`])).rows[0].id as string;
  const dead = (id: string) =>
    eventually(
      async () => {
        const r = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox/deliveries/${id}`);
        return r.body?.status === 'dead' ? r.body : null;
      },
      60_000,
      `${id} to be dead`,
    );
  const reasonOf = async (id: string) =>
    (await readTopic(svc, svc.ctx.topics.dead)).find((m) => m.key?.toString() === id)?.headers?.['dead-reason']?.toString();

  it('ends a target that always fails dead once the next attempt would pass 24 h after creation', async () => {
    receiver.script('/down', { status: 502 });
    const id = await enqueue('/down');
    const d = await dead(id);
    const created = Date.parse(d.created_at);
    const history = d.attempt_history as { started_at: string; finished_at: string; outcome: string; error: string }[];
    // The last scheduled attempt may fall due so close to the limit that the retry consumer takes
    // it a moment after: it then ends dead without a request ('expired') instead of being made late.
    const made = history.filter((h) => h.outcome === 'failed');
    const expired = history.length - made.length;
    expect(expired).toBeLessThanOrEqual(1);
    if (expired) expect(history.at(-1)!.error).toMatch(/MAX_MESSAGE_AGE/);
    expect(made.length).toBeGreaterThan(1);
    expect(made.length).toBeLessThan(8);
    expect(receiver.to('/down')).toHaveLength(made.length);
    // every attempt was made within the age limit
    for (const h of made) expect(Date.parse(h.started_at)).toBeLessThanOrEqual(created + AGE * SCALE);
    if (!expired) {
      // and the next step would have passed it
      expect(Date.parse(made.at(-1)!.finished_at) + STEP * SCALE).toBeGreaterThan(created + AGE * SCALE);
      expect(await reasonOf(id)).toBe('age');
    } else expect(await reasonOf(id)).toBe('expired');
  });

  it('does not attempt a message first taken after its 24 h', async () => {
    await Promise.all(dispatcher.map((w) => w.stop()));
    receiver.script('/late', { status: 200 });
    const id = await enqueue('/late');
    await new Promise((r) => setTimeout(r, AGE * SCALE + 1000));
    dispatcher = await startWorkers(svc.ctx, ['dispatcher']);
    const d = await dead(id);
    expect(d.attempts).toBe(1);
    expect(d.last_error).toMatch(/MAX_MESSAGE_AGE/);
    expect(receiver.to('/late')).toHaveLength(0);
    expect(await reasonOf(id)).toBe('expired');
  });
});
