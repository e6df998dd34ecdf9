// `npm start` runs the service compiled to dist/ (scripts/build-service.mjs), while tests run the
// sources through tsx. Files the service reads at start are found from the checkout's root
// (config.ts repoRoot), not from the module's own place, so both layouts must resolve them alike.
// The real start is exercised by integration/first-run.test.ts; this one shows the compiled modules
// find the same root, dashboard and base schema as the sources. It builds into a directory of its
// own, so a service started from dist/ beside it is not disturbed.
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../../src/config.js';
import { dashboardDist } from '../../../src/http/dashboard.js';
import { baseSchemaVersion } from '../../../src/outbox/enable.js';

const outDir = `.build-test-${process.pid}`;

describe('the compiled service', () => {
  afterAll(() => rmSync(path.join(repoRoot, outDir), { recursive: true, force: true }));

  it('resolves the checkout, the dashboard and the base schema as the sources do', () => {
    execFileSync(process.execPath, [path.join(repoRoot, 'scripts', 'build-service.mjs'), '--out', outDir], { cwd: repoRoot });
    const compiled = path.join(repoRoot, outDir, 'src');
    expect(existsSync(path.join(compiled, 'main.js'))).toBe(true);
    const script = `
      const [{ repoRoot }, { dashboardDist }, { baseSchemaVersion }] = await Promise.all([
        import(${JSON.stringify(path.join(compiled, 'config.js'))}),
        import(${JSON.stringify(path.join(compiled, 'http', 'dashboard.js'))}),
        import(${JSON.stringify(path.join(compiled, 'outbox', 'enable.js'))}),
      ]);
      console.log(JSON.stringify({ repoRoot, dashboardDist, baseSchemaVersion }));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot, encoding: 'utf8' });
    expect(JSON.parse(out.trim().split('\n').at(-1)!)).toEqual({ repoRoot, dashboardDist, baseSchemaVersion });
  });
});
