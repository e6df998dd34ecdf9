// Our murmur2 partitioner places every key where kafkajs's DefaultPartitioner (and so Debezium's
// Java producer) does: checked against kafkajs's own implementation on keys of every length up
// to 64 bytes, random bytes, UUIDs and ordering keys with non-ASCII text, for 1 to 64 partitions.
import { createRequire } from 'node:module';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Partitioners, type PartitionerArgs } from 'kafkajs';
import { JavaCompatiblePartitioner, murmur2 } from '../../../src/kafka/partitioner.js';

const theirs = createRequire(import.meta.url)('kafkajs/src/producer/partitioners/default/murmur2.js') as (key: Buffer | string) => number;

const keys: (Buffer | string)[] = [
  '',
  'a',
  'ab',
  'abc',
  'abcd',
  'row:0b4d1c7e-5a8f-4e2b-9c3d-7f6e5d4c3b2a:[42]',
  'row:w:["naïve café ☕ 日本"]',
  ...Array.from({ length: 65 }, (_, n) => randomBytes(n)),
  ...Array.from({ length: 2000 }, () => randomUUID()),
  ...Array.from({ length: 500 }, () => randomBytes(1 + (randomBytes(1)[0] % 200))),
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0x80]),
];

describe('murmur2 partitioner', () => {
  it('hashes every key as kafkajs (the Java client) does', () => {
    for (const key of keys) expect(murmur2(key), String(key)).toBe(theirs(key));
  });

  it('picks the partition kafkajs’s DefaultPartitioner picks, for keyed records; defers to it otherwise', () => {
    const ours = JavaCompatiblePartitioner();
    const reference = Partitioners.DefaultPartitioner();
    for (const n of [1, 2, 3, 12, 64]) {
      const partitionMetadata = Array.from({ length: n }, (_, i) => ({ partitionId: i, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
      for (const key of keys) {
        const args = { topic: 't', partitionMetadata, message: { key, value: 'v' } } as PartitionerArgs;
        expect(ours(args)).toBe(reference(args));
      }
      const given = { topic: 't', partitionMetadata, message: { key: 'k', value: 'v', partition: n - 1 } } as PartitionerArgs;
      expect(ours(given)).toBe(n - 1);
      const keyless = ours({ topic: 't', partitionMetadata, message: { value: 'v' } } as PartitionerArgs);
      expect(keyless).toBeGreaterThanOrEqual(0);
      expect(keyless).toBeLessThan(n);
    }
  });
});
