// `npm run test:crash`: the crash-safety test, kept out of `npm test` because it takes minutes. It
// kills and restarts Kafka and Kafka Connect of a stack of its own (stack-env.ts, started and
// wiped by global-setup.ts), never the shared one. CI runs it after npm test.
//
// It also runs the ordered-delivery file at the size (ORDERED_STRESS=1: 200 rows x 20
// updates, 503s, slow answers, a dispatcher killed), which npm test runs at a quarter of that so
// as not to starve the files beside it. And the idle-quiet and idle-wal files, which need a
// cluster to themselves (idle-quiet waits for the cluster to go quiet and holds a transaction
// open; idle-wal depends on PostgreSQL's statistics timing, which a loaded machine stretches). One
// file at a time: the crash test kills the stack's parts.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { crashStackEnv } from './stack-env.js';

export default defineConfig({
  root: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..'),
  test: {
    include: ['test/crash/**/*.test.ts', 'test/integration/ordered-delivery.test.ts', 'test/integration/idle-quiet.test.ts', 'test/integration/idle-wal.test.ts'],
    fileParallelism: false,
    environment: 'node',
    globalSetup: ['test/crash/global-setup.ts'],
    // the test's process and the dispatchers it spawns (their master key is under this STACK_DIR)
    env: { ...crashStackEnv, ORDERED_STRESS: '1' },
    testTimeout: 15 * 60_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
