// The import rules of docs/architecture.md, as `npm test` checks them: dependency-cruiser with
// .dependency-cruiser.cjs over src/, web/src/ and bench/ (no cycle, type-only imports included;
// another area only through its index.ts; imports only from a layer at or below one's own).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const depcruise = path.join(root, 'node_modules', '.bin', 'depcruise');

it('src/, web/src/ and bench/ keep the import rules of .dependency-cruiser.cjs', async () => {
  const run = promisify(execFile)(depcruise, ['--config', '.dependency-cruiser.cjs', '--output-type', 'err', 'src', 'web/src', 'bench'], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
  const { stdout } = await run.catch((err: { stdout?: string; stderr?: string; code?: string | number; message?: string }) => {
    // not installed (a checkout without `npm ci` since dependency-cruiser was added): say so
    if (err.code === 'ENOENT') expect.fail(`${depcruise} is missing: run npm ci`);
    // exit code 1 with the violations on stdout: show them as the failure
    expect.fail(`dependency rules violated:\n${err.stdout ?? ''}${err.stderr ?? ''}${err.stdout || err.stderr ? '' : (err.message ?? '')}`);
  });
  expect(stdout).toContain('no dependency violations found');
}, 60_000);
