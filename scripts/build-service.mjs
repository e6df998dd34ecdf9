// Compiles the service (src/**/*.ts) to dist/src/**/*.js, one file per source as tsx would, with
// source maps; run before `npm start` (package.json "prestart") and by the benchmark. Takes about a
// second, so every start compiles afresh and dist/ is never stale.
//
// Why not `node --import tsx src/main.ts` any more: tsx's loader hooks run on a thread of their own
// with a V8 isolate of its own, and it keeps what it compiled: 33 MB more resident memory for the
// same idle service (185 MB against 152 MB, measured 2026-11-26), for no work once the service has
// loaded. Tests and the tools under scripts/ still run the sources through tsx; the service runs
// what this script emits.
import { readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
// `--out <dir>` (relative to the checkout): a test builds beside a running service's dist/
const outArg = process.argv.indexOf('--out');
const out = join(root, outArg > 0 ? process.argv[outArg + 1] : 'dist');

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
  );
}

const started = performance.now();
const entryPoints = sources(src);
// a source deleted or renamed must not leave its old output behind to be imported
rmSync(out, { recursive: true, force: true });
await build({
  entryPoints,
  outdir: out,
  outbase: root,
  bundle: false,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // node --enable-source-maps (the start script) then names src/…/x.ts and its lines in stack traces
  sourcemap: 'linked',
  logLevel: 'warning',
});
if (process.argv.includes('--verbose')) {
  console.log(`service: compiled ${entryPoints.length} files to ${relative(root, out)}/ in ${Math.round(performance.now() - started)} ms`);
}
