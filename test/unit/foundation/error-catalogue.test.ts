import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { catalogue } from '../../../src/errors.js';
import { docTable, ERROR_DOC, errorTable } from '../../../scripts/error-table.js';

describe('error catalogue', () => {
  it('uses stable snake_case codes with 4xx/5xx statuses', () => {
    for (const [code, [status, message]] of Object.entries(catalogue)) {
      expect(code).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(message.length).toBeGreaterThan(0);
    }
  });

  it('agrees with the table of docs/errors.md (npm run docs:errors regenerates it)', () => {
    expect(docTable(readFileSync(ERROR_DOC, 'utf8'))).toBe(errorTable());
  });

  it('is linked from the README', () => {
    expect(readFileSync('README.md', 'utf8')).toContain(`](${ERROR_DOC})`);
  });
});
