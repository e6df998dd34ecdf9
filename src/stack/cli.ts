// npm run stack -- up|down|status|reset
import { loadConfig, ConfigError } from '../config.js';
import { stackDown, stackReset, stackStatus, stackUp } from './local-stack.js';

async function main() {
  const cmd = process.argv[2];
  const cfg = loadConfig();
  if (cfg.external && cmd !== 'status') {
    console.error('DATABASE_URL, KAFKA_BROKERS and KAFKA_CONNECT_URL are set: the external stack is used and nothing is provisioned here.');
    process.exit(2);
  }
  switch (cmd) {
    case 'up': {
      const t0 = Date.now();
      const e = await stackUp(cfg);
      console.log(`stack up in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
      console.log(`  DATABASE_URL=${e.databaseUrl}\n  KAFKA_BROKERS=${e.kafkaBrokers.join(',')}\n  KAFKA_CONNECT_URL=${e.connectUrl}`);
      break;
    }
    case 'down':
      await stackDown(cfg);
      break;
    case 'reset':
      await stackReset(cfg);
      break;
    case 'status': {
      const parts = await stackStatus(cfg);
      for (const p of parts) console.log(`${p.name.padEnd(9)} port ${String(p.port).padEnd(6)} pid ${String(p.pid ?? '-').padEnd(8)} ${p.detail}`);
      process.exitCode = parts.every((p) => p.healthy) ? 0 : 1;
      break;
    }
    default:
      console.error('usage: npm run stack -- up|down|status|reset');
      process.exit(2);
  }
}

main().catch((e) => {
  console.error(e instanceof ConfigError ? e.message : (e as Error).message);
  process.exit(1);
});
