// `npm run test:crash`: the crash-safety test, kept out of `npm test` because it kills and restarts
// the shared stack's Kafka broker and Kafka Connect and takes minutes. CI runs it after npm test.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..'),
  test: {
    include: ['test/crash/**/*.test.ts'],
    environment: 'node',
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30 * 60_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
