// Builds the dashboard when web/dist is missing or older than its sources (run before `npm start`
// and by the browser tests), so a checkout never serves a stale page.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const web = fileURLToPath(new URL('.', import.meta.url));
const built = join(web, 'dist', 'index.html');
// the SSO setup page is a second page of the same build
const setupBuilt = join(web, 'dist', 'sso-setup.html');

function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(path).map((f) => newest(join(path, f))));
}

const sources = ['index.html', 'sso-setup.html', 'vite.config.ts', 'tsconfig.json', 'src'].map((f) => join(web, f));
const stale = !existsSync(built) || !existsSync(setupBuilt) || Math.max(...sources.map(newest), newest(join(web, '..', 'package-lock.json'))) > statSync(built).mtimeMs;
if (stale) {
  console.log('dashboard: building web/dist');
  const r = spawnSync('npm', ['run', '--silent', 'build:web'], { cwd: join(web, '..'), stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
