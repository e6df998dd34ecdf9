// Which Debezium versions fail idle projects' connectors (debezium-version.ts): 3.2 and later
// refuse a stored offset behind the slot, which every idle-slot advance or replacement leaves.
// The real Connect's answer (3.1.2, accepted) is read in integration/outbox-refresh.test.ts.
import { describe, expect, it } from 'vitest';
import { idleCaptureHazard } from '../../../src/outbox/debezium-version.js';

describe('idleCaptureHazard', () => {
  it.each(['3.1.2.Final', '3.1.0.Beta1', '3.0.8.Final', '2.7.4.Final', '1.9.7.Final'])('accepts %s', (v) => {
    expect(idleCaptureHazard(v)).toBeNull();
  });

  it.each(['3.2.0.Final', '3.2.6.Final', '3.4.0.CR1', '4.0.0.Alpha1', '10.1.0.Final'])('warns of %s, naming it and what to do', (v) => {
    const why = idleCaptureHazard(v);
    expect(why).toContain(`Debezium ${v}`);
    expect(why).toMatch(/Run Debezium 3\.1\.x, or set CAPTURE_IDLE_AFTER=0/);
  });

  it('claims nothing of a version it cannot read', () => {
    for (const v of ['', 'unknown', '3', 'v3.2.0']) expect(idleCaptureHazard(v)).toBeNull();
  });
});
