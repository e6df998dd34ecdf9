import { describe, expect, it, vi } from 'vitest';
import { assertSchemaValid } from '../../../src/sso/saml/core/schema.js';
import { responseOptions, testIdp } from './context.js';

describe('assertSchemaValid', () => {
  it('accepts a valid response and refuses an invalid one', async () => {
    await expect(assertSchemaValid(testIdp.responseXml(responseOptions()))).resolves.toBeUndefined();
    await expect(assertSchemaValid('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>')).rejects.toMatchObject({
      code: 'invalid_saml_response',
      message: expect.stringMatching(/schemas/),
    });
  }, 30_000);

  // Validation findings quote attacker-controlled text; they must not reach stdout/stderr outside
  // the structured logs, and the validator must leave no process-wide listeners behind.
  it('leaves no process listeners behind and writes nothing to stdout, stderr or the console', async () => {
    const listeners = () => [process.listenerCount('uncaughtException'), process.stdout.listenerCount('drain')];
    const before = listeners();
    const writes = [
      vi.spyOn(process.stdout, 'write'),
      vi.spyOn(process.stderr, 'write'),
      vi.spyOn(console, 'log'),
      vi.spyOn(console, 'debug'),
      vi.spyOn(console, 'error'),
    ];
    try {
      await assertSchemaValid(testIdp.responseXml(responseOptions()));
      await assertSchemaValid('<not-saml/>').catch(() => undefined);
      expect(listeners()).toEqual(before);
      for (const w of writes) expect(w).not.toHaveBeenCalled();
    } finally {
      for (const w of writes) w.mockRestore();
    }
  }, 30_000);
});
