import { describe, expect, it } from 'vitest';
import { chooseMessagePrefix, MESSAGE_PREFIX_PATTERN } from '../../../src/outbox/messages.js';

describe('the prefix rendered into the connector config', () => {
  it('is the database one once armed, else the one the connector has, else a new random one', () => {
    const armed = `base_outbox_${'a'.repeat(32)}`;
    const given = `base_outbox_${'b'.repeat(32)}`;
    expect(chooseMessagePrefix(armed, { 'message.prefix.include.list': given })).toBe(armed);
    expect(chooseMessagePrefix(null, { 'message.prefix.include.list': given })).toBe(given);
    const fresh = chooseMessagePrefix(null, null);
    expect(fresh).toMatch(MESSAGE_PREFIX_PATTERN);
    expect(chooseMessagePrefix(null, null)).not.toBe(fresh);
    // anything else in the config (set by hand, a pattern, an older build's) is not trusted
    for (const other of ['', '.*', 'base_outbox_', `base_outbox_${'g'.repeat(32)}`, `${given},other`]) {
      const chosen = chooseMessagePrefix(null, { 'message.prefix.include.list': other });
      expect(chosen).toMatch(MESSAGE_PREFIX_PATTERN);
      expect(chosen).not.toBe(other);
    }
  });
});
