// The Java client's partitioner (murmur2 of the key, as Debezium's producer and kafkajs's
// DefaultPartitioner place a keyed record), with 32-bit arithmetic done by Math.imul. kafkajs's
// own murmur2 does every multiply with its 64-bit Long class: 1.2 % of the service's CPU under
// load (e2e profile, 2026-11-27; docs/benchmark.md, sixteenth round). The partition must be the
// same as theirs for every key (an ordered message's retry meets its key's other messages in the
// partition Debezium chose), which test/unit/kafka/partitioner.test.ts checks against kafkajs's.
// A record with a partition of its own or without a key goes to kafkajs's partitioner as before.
import { Partitioners, type ICustomPartitioner } from 'kafkajs';

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2): a signed 32-bit hash. */
export function murmur2(key: Buffer | string): number {
  const data = typeof key === 'string' ? Buffer.from(key) : key;
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & ~3;
  switch (length & 3) {
    case 3:
      h ^= data[tail + 2] << 16;
    // falls through
    case 2:
      h ^= data[tail + 1] << 8;
    // falls through
    case 1:
      h ^= data[tail];
      h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** kafkajs's DefaultPartitioner, its murmur2 replaced: for `createPartitioner`. */
export const JavaCompatiblePartitioner: ICustomPartitioner = () => {
  const fallback = Partitioners.DefaultPartitioner();
  return (args) => {
    const { message, partitionMetadata } = args;
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key === null || message.key === undefined) return fallback(args);
    return (murmur2(message.key) & 0x7fffffff) % partitionMetadata.length;
  };
};
