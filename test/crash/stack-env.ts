// The crash test's own local stack: it kills and restarts Kafka and Connect, so it must never touch
// the stack other runs share (.stack, ports 54329/19092/18083) nor CI's. State under .stack-crash,
// ports of its own; set here once for the global setup, the test and the dispatchers it spawns.
import path from 'node:path';
import { loadConfig, repoRoot } from '../../src/config.js';

export const crashStackEnv = {
  STACK_DIR: path.join(repoRoot, '.stack-crash'),
  STACK_PG_PORT: '55529',
  STACK_KAFKA_PORT: '29592',
  STACK_KAFKA_CONTROLLER_PORT: '29593',
  STACK_CONNECT_PORT: '28583',
};

/** The configuration naming that stack, whatever the environment says about another one. */
export function crashStackConfig() {
  const env: NodeJS.ProcessEnv = { ...process.env, ...crashStackEnv, APP_ENV: 'test' };
  for (const k of ['DATABASE_URL', 'KAFKA_BROKERS', 'KAFKA_CONNECT_URL']) delete env[k];
  return loadConfig(env);
}
