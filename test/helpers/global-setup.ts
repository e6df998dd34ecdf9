// Starts the local stack once for the whole run (or reuses a running one), or uses the external
// stack when DATABASE_URL, KAFKA_BROKERS and KAFKA_CONNECT_URL are set. It is left running after
// the run so the next run starts in seconds; `npm run stack -- down` stops it (.ci/run does).
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../src/config.js';
import { stackUp } from '../../src/stack/local-stack.js';
import { resolveChromium } from './browser.js';

export default async function setup(project: TestProject) {
  const cfg = loadConfig({ ...process.env, APP_ENV: 'test' });
  let endpoints;
  if (cfg.external) {
    endpoints = { databaseUrl: cfg.DATABASE_URL!, adminDatabaseUrl: adminUrl(cfg.DATABASE_URL!), kafkaBrokers: cfg.KAFKA_BROKERS!, connectUrl: cfg.KAFKA_CONNECT_URL! };
  } else {
    const t0 = Date.now();
    endpoints = await stackUp(cfg, (l) => console.log(`[stack] ${l}`));
    console.log(`[stack] ready in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  }
  project.provide('stack', endpoints);
  // once for the run (an install must not race between files); a missing browser is one clear line
  project.provide('chromium', resolveChromium({ log: (l) => console.log(`[browser] ${l}`) }));
}

function adminUrl(url: string) {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
}

declare module 'vitest' {
  export interface ProvidedContext {
    stack: { databaseUrl: string; adminDatabaseUrl: string; kafkaBrokers: string[]; connectUrl: string };
    /** the Chromium executable (test/helpers/browser.ts) */
    chromium: string;
  }
}
