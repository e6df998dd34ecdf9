// At start the service brings enabled projects up to its own version (refreshOutbox): a connector
// whose config differs from the rendered template is PUT again, a base schema installed from
// another base-schema.sql is re-installed, and an up-to-date project is left untouched.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import net, { type AddressInfo } from 'node:net';
import pg from 'pg';
import { ConnectClient } from '../../src/kafka/index.js';
import { connectorName, renderConnectorConfig } from '../../src/outbox/index.js';
import { baseSchemaVersion, disableOutbox, enableOutbox, refreshOutbox, type OutboxEnv } from '../../src/outbox/enable.js';
import { refreshEnabledOutboxes, watchDebeziumVersion } from '../../src/outbox/service.js';
import { installWebhookTrigger } from '../../src/outbox/webhook-triggers.js';
import { armMessages, chooseMessagePrefix, databaseNow, MESSAGE_PREFIX_KEY, MESSAGE_PREFIX_PATTERN } from '../../src/outbox/messages.js';
import { applySpeed, POLL_KEY } from '../../src/outbox/capture-speed.js';
import type { Config } from '../../src/config.js';
import { createDatabase, createTopicReady, dropDatabase, eventually, stack, uniqueName } from '../helpers/env.js';
import { startTestService } from '../helpers/service.js';

describe('refreshing an enabled outbox', () => {
  const prefix = uniqueName('rfr');
  const ref = uniqueName('p');
  const dbName = `proj_${ref}`;
  const topic = `${prefix}.outbox`;
  let dbUrl: string;
  let env: OutboxEnv;
  const name = () => connectorName(ref, prefix);

  const schemaComment = async () => {
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    try {
      return (await c.query(`select obj_description('base'::regnamespace, 'pg_namespace') as v`)).rows[0].v as string | null;
    } finally {
      await c.end();
    }
  };

  /** Reads the outbox topic from the start until records carry every marker (60 s at most). */
  const markerOnTopic = async (marker: string | string[], what: string) => {
    const left = new Set(Array.isArray(marker) ? marker : [marker]);
    const consumer = new Kafka({ brokers: stack().kafkaBrokers, logLevel: logLevel.NOTHING }).consumer({ groupId: uniqueName('rfr-read') });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      const seen = new Promise<void>((resolve) => {
        void consumer.run({
          eachMessage: async ({ message }) => {
            const value = message.value?.toString() ?? '';
            for (const m of left) if (value.includes(m)) left.delete(m);
            if (left.size === 0) resolve();
          },
        });
      });
      await Promise.race([seen, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} never arrived (${left.size} missing)`)), 60_000))]);
    } finally {
      await consumer.disconnect();
    }
  };

  /** A logger that keeps the level and message of each line, and which Debezium version watch reads through it. */
  const recordingWatch = (connectUrl: string, intervals?: { everyMs: number; retryMs: number }) => {
    const logged: { level: string; msg: string }[] = [];
    const line = (level: string) => (_o: object, msg: string) => void logged.push({ level, msg });
    const log = { info: line('info'), warn: line('warn'), error: line('error') };
    const watch = watchDebeziumVersion({ connect: new ConnectClient(connectUrl), cfg: { CAPTURE_IDLE_AFTER: 600_000 } as Config, log: log as never }, intervals);
    return { logged, watch };
  };

  // At start the service reads the Debezium version from the real Connect (GET /connector-plugins)
  // and warns when it would fail idle projects' connectors (3.2 and later); the stack's 3.1.2 passes.
  it('reads the Debezium version Kafka Connect runs, and accepts the 3.1 of the stack', async () => {
    const { logged, watch } = recordingWatch(stack().connectUrl);
    try {
      const found = await watch.first;
      expect(found?.version).toMatch(/^3\.1\.\d+\./);
      expect(found?.hazard).toBeNull();
      expect(logged).toEqual([{ level: 'info', msg: 'Kafka Connect runs Debezium' }]);
    } finally {
      watch.stop();
    }
    // Connect away: nothing claimed, nothing thrown, nothing logged
    const away = recordingWatch('http://127.0.0.1:1');
    try {
      expect(await away.watch.first).toBeNull();
      expect(away.logged).toEqual([]);
    } finally {
      away.watch.stop();
    }
  });

  // The running service reads the version again: a Connect away at start (here: a TCP forwarder to
  // the real Connect that drops every connection until told otherwise) is read once it answers, and
  // an unchanged version is read again without being logged again.
  it('watches the version: read once Connect answers, not logged again while unchanged', async () => {
    const upstream = new URL(stack().connectUrl);
    let away = true;
    let reads = 0;
    const forwarder = net.createServer((sock) => {
      if (away) return void sock.destroy();
      const up = net.connect(Number(upstream.port), upstream.hostname);
      sock.on('data', (d) => (reads += d.toString('latin1').split('GET /connector-plugins').length - 1));
      sock.pipe(up).pipe(sock);
      up.on('error', () => sock.destroy());
      sock.on('error', () => up.destroy());
    });
    await new Promise<void>((r) => forwarder.listen(0, '127.0.0.1', r));
    const { logged, watch } = recordingWatch(`http://127.0.0.1:${(forwarder.address() as AddressInfo).port}`, { everyMs: 100, retryMs: 100 });
    try {
      expect(await watch.first).toBeNull(); // away: nothing claimed
      await new Promise((r) => setTimeout(r, 300)); // a few retries, still away
      expect(logged).toEqual([]);
      away = false;
      await eventually(async () => logged.length > 0, 10_000, 'the version read once Connect answers');
      await eventually(async () => reads >= 5, 10_000, 'further reads of the version');
      expect(logged).toEqual([{ level: 'info', msg: 'Kafka Connect runs Debezium' }]);
    } finally {
      watch.stop();
      forwarder.close();
    }
    // stopped: no read after it (one already on its way when stop() came may still land)
    await new Promise((r) => setTimeout(r, 150));
    const after = reads;
    await new Promise((r) => setTimeout(r, 400));
    expect(reads).toBe(after);
  });

  beforeAll(async () => {
    dbUrl = await createDatabase(dbName);
    const admin = new Kafka({ brokers: stack().kafkaBrokers, clientId: 'refresh-test', logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await createTopicReady(admin, topic, 1);
    await admin.disconnect();
    env = { connect: new ConnectClient(stack().connectUrl), topicPrefix: prefix, outboxTopic: topic };
    await enableOutbox(env, ref, dbUrl);
  });

  afterAll(async () => {
    await disableOutbox(env, ref, dbUrl).catch(() => {});
    await dropDatabase(dbName).catch(() => {});
  });

  it('leaves an up-to-date project alone, for one connection, one query and one GET from Connect', async () => {
    expect(await schemaComment()).toBe(baseSchemaVersion);
    // what a start pays for every enabled project that needs nothing (counted in this process: the
    // refresh runs here, on the test's own pg and ConnectClient)
    const connects = vi.spyOn(pg.Client.prototype, 'connect');
    const queries = vi.spyOn(pg.Client.prototype, 'query');
    const calls = vi.spyOn(env.connect as unknown as { call: (m: string, p: string) => Promise<unknown> }, 'call');
    try {
      expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'current', connector: 'current', publication: 'current', messages: 'current' });
      expect(connects).toHaveBeenCalledTimes(1);
      expect(queries).toHaveBeenCalledTimes(1);
      expect(calls.mock.calls.map(([method, path]) => `${method} ${path}`)).toEqual([`GET /connectors/${name()}/config`]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('re-applies the template to a connector registered with other settings, and re-installs an older schema', async () => {
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    const messagePrefix = (await c.query('select message_prefix from base.capture')).rows[0].message_prefix as string;
    const wanted = renderConnectorConfig({ ref, databaseUrl: dbUrl, topic, messagePrefix }, prefix);
    await env.connect.upsert(name(), { ...wanted, 'heartbeat.interval.ms': '777', 'poll.interval.ms': '777' });
    // a schema from a build before messages: no prefix column (nothing here uses the trigger yet)
    await c.query(`comment on schema base is 'integrations base schema 0000000000000000'`);
    await c.query('alter table base.capture drop column message_prefix');

    // the refresh's first query fails on the older schema at parse, and is asked again without it
    expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'reinstalled', connector: 'updated', publication: 'current', messages: 'armed' });
    // armed again with the prefix the connector's config already had
    expect((await c.query('select message_prefix from base.capture')).rows[0].message_prefix).toBe(messagePrefix);
    await c.end();
    expect((await env.connect.config(name()))!['heartbeat.interval.ms']).toBe(wanted['heartbeat.interval.ms']);
    // a poll interval neither speed has is the template's again
    expect((await env.connect.config(name()))!['poll.interval.ms']).toBe(wanted['poll.interval.ms']);
    expect(wanted['heartbeat.interval.ms']).not.toBe('777');
    expect(await schemaComment()).toBe(baseSchemaVersion);
    await env.connect.waitRunning(name());
    expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'current', connector: 'current', publication: 'current', messages: 'current' });
  });

  it('registers a deleted connector again from its slot, and delivers what was committed while it was gone', async () => {
    await env.connect.waitRunning(name());
    await env.connect.remove(name());
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    const marker = `while-gone-${Date.now()}`;
    await c.query(`select base.http_request('POST', 'https://example.com/hook', '{}'::jsonb, jsonb_build_object('marker', $1::text))`, [marker]);
    // and a webhook's logical decoding message: the connector registered again reads its prefix
    await c.query('create table public.while_gone (id serial primary key, note text)');
    await installWebhookTrigger(c, { id: '3c2b1a09-8f7e-4d6c-8b5a-493827160504', schema: 'public', table: 'while_gone', events: ['INSERT'] });
    expect((await c.query('select message_prefix from base.capture')).rows[0].message_prefix).toMatch(/^base_outbox_/);
    const hooked = `hooked-while-gone-${Date.now()}`;
    await c.query('insert into public.while_gone (note) values ($1)', [hooked]);
    await c.end();

    expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'current', connector: 'recreated', publication: 'current', messages: 'current' });
    await env.connect.waitRunning(name());
    expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'current', connector: 'current', publication: 'current', messages: 'current' });
    await markerOnTopic([marker, hooked], 'the messages committed while the connector was gone');
  });

  it('puts base.outbox back into the publication when someone took it out, and what is enqueued after is captured', async () => {
    await env.connect.waitRunning(name());
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    const pub = (await c.query(`select pubname from pg_publication_tables where schemaname = 'base' and tablename = 'outbox'`)).rows[0].pubname as string;
    await c.query(`alter publication ${pg.escapeIdentifier(pub)} drop table base.outbox`);
    expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'current', connector: 'current', publication: 'restored', messages: 'current' });
    expect((await c.query(`select 1 from pg_publication_tables where pubname = $1 and schemaname = 'base' and tablename = 'outbox'`, [pub])).rowCount).toBe(1);
    expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'current', connector: 'current', publication: 'current', messages: 'current' });
    const marker = `after-restore-${Date.now()}`;
    await c.query(`select base.http_request('POST', 'https://example.com/hook', '{}'::jsonb, jsonb_build_object('marker', $1::text))`, [marker]);
    await c.end();
    await markerOnTopic(marker, 'the message enqueued after the publication was restored');
  });

  it('moves a project of the row build to logical messages only once its task reads them, losing nothing written meanwhile', async () => {
    await env.connect.waitRunning(name());
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    const writer = new pg.Client({ connectionString: dbUrl });
    await writer.connect();
    try {
      await c.query('create table if not exists public.upgraded (id serial primary key, note text)');
      await installWebhookTrigger(c, { id: '0b4d1c7e-5a8f-4e2b-9c3d-7f6e5d4c3b2a', schema: 'public', table: 'upgraded', events: ['INSERT'] });
      // the build before: no prefix in the database, a connector that knows no messages
      await c.query('update base.capture set message_prefix = null');
      const older = { ...(await env.connect.config(name()))! };
      delete older['message.prefix.include.list'];
      delete older['transforms.message.type'];
      older.transforms = 'outbox,project';
      await env.connect.upsert(name(), older);
      await eventually(async () => (await env.connect.taskConfigs(name())).every((t) => t.transforms === 'outbox,project'), 30_000, 'the older task config');
      await env.connect.waitRunning(name());
      const before = `row-build-${Date.now()}`;
      await c.query('insert into public.upgraded (note) values ($1)', [before]);

      // an application writing all through the upgrade
      const during: string[] = [];
      let writing = true;
      const writes = (async () => {
        for (let i = 0; writing; i++) {
          const note = `during-${Date.now()}-${i}`;
          await writer.query('insert into public.upgraded (note) values ($1)', [note]);
          during.push(note);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const result = await refreshOutbox(env, ref, dbUrl);
      writing = false;
      await writes;
      expect(result).toEqual({ schema: 'current', connector: 'updated', publication: 'current', messages: 'armed' });
      const armed = (await c.query('select message_prefix from base.capture')).rows[0].message_prefix as string;
      expect((await env.connect.config(name()))!['message.prefix.include.list']).toBe(armed);

      // from now on the trigger writes messages (outbox-webhook-trigger.test.ts), which the task reads
      const after = `message-build-${Date.now()}`;
      await c.query('insert into public.upgraded (note) values ($1)', [after]);
      expect(during.length).toBeGreaterThan(0);
      await markerOnTopic([before, ...during, after], 'the rows written before, during and after the upgrade');
      expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'current', connector: 'current', publication: 'current', messages: 'current' });
    } finally {
      await writer.end();
      await c.end();
    }
  });

  it('arms messages only on proof: task configs with the prefix, and a reader connected since, or none while stopped', async () => {
    await env.connect.waitRunning(name());
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    try {
      const slot = (await c.query(`select slot_name from pg_replication_slots where database = current_database()`)).rows[0].slot_name as string;
      const armed = (await c.query('select message_prefix from base.capture')).rows[0].message_prefix as string;
      await c.query('update base.capture set message_prefix = null');
      const probe = { connector: name(), slot, waitMs: 1_500 };
      // a prefix the task configs do not carry (an older config): never
      expect(await armMessages(env.connect, c, { ...probe, prefix: chooseMessagePrefix(null, null), since: await databaseNow(c) })).toBe(false);
      // the configs carry it, but the reader connected before `since`: it may be a task from before
      await eventually(async () => (await c.query('select active from pg_replication_slots where slot_name = $1', [slot])).rows[0].active, 30_000, 'a reader on the slot');
      const since = await databaseNow(c);
      expect(await armMessages(env.connect, c, { ...probe, prefix: armed, since })).toBe(false);
      expect((await c.query('select message_prefix from base.capture')).rows[0].message_prefix).toBeNull();
      // its tasks restarted: the new reader is the proof
      await env.connect.restartAll(name());
      expect(await armMessages(env.connect, c, { ...probe, prefix: armed, since, waitMs: 30_000 })).toBe(true);
      expect((await c.query('select message_prefix from base.capture')).rows[0].message_prefix).toBe(armed);
      // stopped, with its slot free: armed at once (whatever starts later has the config)
      await c.query('update base.capture set message_prefix = null');
      await env.connect.setTarget(name(), 'stop');
      await eventually(async () => !(await c.query('select active from pg_replication_slots where slot_name = $1', [slot])).rows[0].active, 30_000, 'the slot free');
      expect(await armMessages(env.connect, c, { ...probe, prefix: armed, since: await databaseNow(c), waitMs: 30_000 })).toBe(true);
      await env.connect.setTarget(name(), 'resume');
      await env.connect.waitRunning(name());
      // a prefix the connector's config does not name (left by a rollback, set by hand) is cleared
      // before the install, and the connector's own armed again on proof
      await c.query('update base.capture set message_prefix = $1', [`base_outbox_${'c'.repeat(32)}`]);
      expect((await refreshOutbox(env, ref, dbUrl)).messages).toBe('armed');
      expect((await c.query('select message_prefix from base.capture')).rows[0].message_prefix).toBe(armed);
    } finally {
      await c.end();
    }
  });

  it('a speed change never writes back a config without the message prefix: the refresh mends it first', async () => {
    await env.connect.waitRunning(name());
    const template = renderConnectorConfig({ ref, databaseUrl: dbUrl, topic, messagePrefix: chooseMessagePrefix(null, null) }, prefix)[POLL_KEY];
    const ctx = { connect: env.connect, cfg: { CAPTURE_SLOW_POLL: 4321 } as Config };
    // an older build's config (read by a check before this start's refresh PUT the template):
    // written back with a slow poll, it would undo the refresh and leave every message unread
    const older = { ...(await env.connect.config(name()))! };
    delete older[MESSAGE_PREFIX_KEY];
    await env.connect.upsert(name(), older);
    expect(await applySpeed(ctx, name(), 'slow', template)).toBe(false);
    const after = (await env.connect.config(name()))!;
    expect(after[POLL_KEY]).toBe(older[POLL_KEY]);
    expect(after[MESSAGE_PREFIX_KEY]).toBeUndefined();
    // the refresh puts the template back (prefix included); the speed applies at the next check
    expect(await refreshOutbox(env, ref, dbUrl)).toMatchObject({ connector: 'updated', messages: 'armed' });
    expect(await applySpeed(ctx, name(), 'slow', template)).toBe(true);
    const slow = (await env.connect.config(name()))!;
    expect(slow[POLL_KEY]).toBe('4321');
    expect(slow[MESSAGE_PREFIX_KEY]).toMatch(MESSAGE_PREFIX_PATTERN);
    await env.connect.waitRunning(name());
    expect(await refreshOutbox(env, ref, dbUrl)).toMatchObject({ connector: 'updated', messages: 'current' }); // back to the template's poll
  });

  it('reports a project whose connector and slot are both gone, and does not invent a new slot', async () => {
    await disableOutbox(env, ref, dbUrl);
    expect(await refreshOutbox(env, ref, dbUrl)).toEqual({ schema: 'current', connector: 'missing', publication: 'missing', messages: 'current' });
    expect(await env.connect.config(name())).toBeNull();
  });
});

describe('refreshing at start', () => {
  it('brings every enabled project of the service up to date and leaves the others alone', async () => {
    const svc = await startTestService({ roles: ['api'] });
    try {
      const enabled = await svc.project();
      const idle = await svc.project();
      expect((await svc.api(enabled.ownerToken, 'POST', `/v1/projects/${enabled.ref}/outbox/enable`)).status).toBe(200);
      const name = connectorName(enabled.ref, svc.cfg.TOPIC_PREFIX);
      const current = (await svc.ctx.connect.config(name))!;
      await svc.ctx.connect.upsert(name, { ...current, 'heartbeat.interval.ms': '777' });

      const results = await refreshEnabledOutboxes(svc.ctx);
      expect([...results.keys()]).toEqual([enabled.ref]);
      expect(results.get(enabled.ref)).toEqual({ schema: 'current', connector: 'updated', publication: 'current', messages: 'current' });
      expect((await svc.ctx.connect.config(name))!['heartbeat.interval.ms']).toBe(current['heartbeat.interval.ms']);
      expect(results.has(idle.ref)).toBe(false);

      // A project whose outbox lock is held (a disable in progress in another process) is skipped:
      // its connector, removed by that disable, must not be registered again.
      await svc.ctx.connect.waitRunning(name);
      await svc.ctx.connect.remove(name);
      const other = await svc.ctx.db.connect();
      try {
        await other.query('select pg_advisory_lock(hashtext($1))', [`outbox:${enabled.ref}`]);
        expect((await refreshEnabledOutboxes(svc.ctx)).has(enabled.ref)).toBe(false);
        expect(await svc.ctx.connect.config(name)).toBeNull();
      } finally {
        await other.query('select pg_advisory_unlock(hashtext($1))', [`outbox:${enabled.ref}`]);
        other.release();
      }
      // once the lock is free, the still-enabled project gets its connector back from its slot
      expect((await refreshEnabledOutboxes(svc.ctx)).get(enabled.ref)).toEqual({ schema: 'current', connector: 'recreated', publication: 'current', messages: 'current' });
      await svc.ctx.connect.waitRunning(name);
    } finally {
      await svc.stop();
    }
  });

  it('creates the outbox and retry topics with daily segments, so 7-day retention means at most ~8 days', async () => {
    const svc = await startTestService({ roles: ['api'] });
    const admin = svc.ctx.kafka.admin();
    await admin.connect();
    try {
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [svc.ctx.topics.outbox, svc.ctx.topics.retry[0].topic, svc.ctx.topics.events].map((name) => ({ type: 2 /* TOPIC */, name })),
      });
      const value = (topic: string, key: string) => resources.find((r) => r.resourceName === topic)!.configEntries.find((e) => e.configName === key)?.configValue;
      for (const topic of [svc.ctx.topics.outbox, svc.ctx.topics.retry[0].topic]) {
        expect(value(topic, 'retention.ms'), topic).toBe(String(7 * 86_400_000));
        expect(value(topic, 'segment.ms'), topic).toBe(String(86_400_000));
      }
      expect(value(svc.ctx.topics.events, 'retention.ms')).toBe('-1');
    } finally {
      await admin.disconnect();
      await svc.stop();
    }
  });
});
