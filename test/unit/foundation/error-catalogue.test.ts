import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { catalogue } from '../../../src/errors.js';
import { errorTable, readmeTable } from '../../../scripts/error-table.js';

describe('error catalogue', () => {
  it('uses stable snake_case codes with 4xx/5xx statuses', () => {
    for (const [code, [status, message]] of Object.entries(catalogue)) {
      expect(code).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(message.length).toBeGreaterThan(0);
    }
  });

  it('agrees with the README table (npm run docs:errors regenerates it)', () => {
    expect(readmeTable(readFileSync('README.md', 'utf8'))).toBe(errorTable());
  });
});
