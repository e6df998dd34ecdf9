// ProjectDatabases.open: the idle projects' wake check reads every idle project's sealed URL four
// times a second, so an opened URL is kept per project until what it was opened from changes.
import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { ProjectDatabases } from '../../../src/db/project-dbs.js';
import type { Pool } from '../../../src/db/pool.js';
import { aad, SecretBox } from '../../../src/lib/secret-box.js';

describe('ProjectDatabases.open', () => {
  const box = new SecretBox(randomBytes(32));
  const dbs = () => new ProjectDatabases({} as Pool, box);

  it('opens a sealed URL once while it stays the same', () => {
    const d = dbs();
    const opens = vi.spyOn(box, 'open');
    const sealed = box.seal('postgres://u:pw@h/one', aad.databaseUrl('p1'));
    expect(d.open('p1', sealed)).toBe('postgres://u:pw@h/one');
    expect(d.open('p1', Buffer.from(sealed))).toBe('postgres://u:pw@h/one');
    expect(opens).toHaveBeenCalledTimes(1);
    opens.mockRestore();
  });

  it('opens again when the sealed value changes: a new URL, or the same re-sealed', () => {
    const d = dbs();
    expect(d.open('p1', box.seal('postgres://h/one', aad.databaseUrl('p1')))).toBe('postgres://h/one');
    expect(d.open('p1', box.seal('postgres://h/two', aad.databaseUrl('p1')))).toBe('postgres://h/two');
    const resealed = box.seal('postgres://h/two', aad.databaseUrl('p1'));
    const opens = vi.spyOn(box, 'open');
    expect(d.open('p1', resealed)).toBe('postgres://h/two');
    expect(opens).toHaveBeenCalledTimes(1);
    opens.mockRestore();
  });

  it("never hands one project's URL to another: the cache is per project, and the seal is bound to it", () => {
    const d = dbs();
    const sealed = box.seal('postgres://h/one', aad.databaseUrl('p1'));
    expect(d.open('p1', sealed)).toBe('postgres://h/one');
    expect(() => d.open('p2', sealed)).toThrow();
  });
});
