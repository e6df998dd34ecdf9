// Starts the crash test's own stack (stack-env.ts) from a clean state and wipes it afterwards, so
// every run restarts a broker holding only its own topics, and nothing is left running.
import type { TestProject } from 'vitest/node';
import { localStackUrls, stackReset, stackUp } from '../../src/stack/local-stack.js';
import { crashStackConfig } from './stack-env.js';

export default async function setup(project: TestProject) {
  const cfg = crashStackConfig();
  const log = (l: string) => console.log(`[crash stack] ${l}`);
  const t0 = Date.now();
  await stackReset(cfg, log); // a run interrupted before its teardown may have left one behind
  await stackUp(cfg, log);
  console.log(`[crash stack] ready in ${((Date.now() - t0) / 1000).toFixed(1)}s under ${cfg.STACK_DIR}`);
  project.provide('stack', localStackUrls(cfg));
  return async () => {
    await stackReset(cfg, log);
  };
}
