import { describe, expect, it } from 'vitest';
import { topicNames } from '../../../src/kafka/topics.js';
import { renderConnectorConfig, slotName } from '../../../src/outbox/index.js';

describe('topic names', () => {
  it('derive one retry topic per delay, a dead topic and an events topic from the prefix', () => {
    const t = topicNames('acme', [30_000, 120_000, 3_600_000, 1500]);
    expect(t.outbox).toBe('acme.outbox');
    expect(t.retry.map((r) => r.topic)).toEqual(['acme.outbox.retry.1-30s', 'acme.outbox.retry.2-2m', 'acme.outbox.retry.3-1h', 'acme.outbox.retry.4-1500ms']);
    expect(t.dead).toBe('acme.outbox.dead');
    expect(t.events).toBe('acme.delivery-events');
  });
});

describe('connector template', () => {
  it('renders slot, publication, topic and project header for one project', () => {
    const c = renderConnectorConfig({ ref: 'my-app', databaseUrl: 'postgres://dbz:p%40ss@db.internal:6543/proj_my_app', topic: 'acme.outbox', messagePrefix: 'base_outbox_0123abcd' }, 'acme');
    expect(c['database.hostname']).toBe('db.internal');
    expect(c['database.port']).toBe('6543');
    expect(c['database.password']).toBe('p@ss');
    expect(c['database.dbname']).toBe('proj_my_app');
    expect(c['slot.name']).toBe(slotName('my-app', 'acme'));
    expect(c['slot.name']).toMatch(/^[a-z0-9_]+$/);
    expect(c['transforms.outbox.route.topic.replacement']).toBe('acme.outbox');
    expect(c['transforms.project.value.literal']).toBe('my-app');
    expect(c['message.prefix.include.list']).toBe('base_outbox_0123abcd');
    expect(Object.values(c).join()).not.toContain('${');
  });
});
