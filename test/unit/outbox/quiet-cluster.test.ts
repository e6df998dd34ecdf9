// Step 7 of idle capture's rule (quiet-cluster.ts): what counts as a quiet cluster, and the WAL an
// idle slot may hold on one. The integration test (idle-quiet.test.ts) shows it on the real stack.
import { describe, expect, it } from 'vitest';
import { advanceThreshold, ClusterPace, QUIET_WINDOW_MS, SLOT_READ_MS, SlotFloors } from '../../../src/outbox/quiet-cluster.js';

const MB = 1024 * 1024;

describe('ClusterPace', () => {
  it('knows nothing until it has read a cluster for a whole window, then gives what it wrote over the last one', () => {
    const p = new ClusterPace();
    expect(p.record('a', 100 * MB, 0)).toBeNull();
    expect(p.record('a', 101 * MB, QUIET_WINDOW_MS - 1)).toBeNull();
    expect(p.record('a', 102 * MB, QUIET_WINDOW_MS)).toBe(2 * MB);
    // the window slides: the reading at 0 is dropped once one at least a window old follows it
    expect(p.record('a', 102 * MB, QUIET_WINDOW_MS * 2 - 1)).toBe(1 * MB);
    expect(p.record('a', 102 * MB, QUIET_WINDOW_MS * 3)).toBe(0);
  });

  it('keeps clusters apart, and starts again when a cluster\'s WAL goes back (a failover to a server behind)', () => {
    const p = new ClusterPace();
    p.record('a', 100 * MB, 0);
    p.record('b', 5 * MB, 0);
    expect(p.record('a', 150 * MB, QUIET_WINDOW_MS)).toBe(50 * MB);
    expect(p.record('b', 5 * MB, QUIET_WINDOW_MS)).toBe(0);
    expect(p.record('a', 90 * MB, QUIET_WINDOW_MS + 1)).toBeNull();
    expect(p.record('a', 90 * MB, 2 * QUIET_WINDOW_MS + 1)).toBe(0);
  });

  it('forgets everything on clear()', () => {
    const p = new ClusterPace();
    p.record('a', 0, 0);
    p.clear();
    expect(p.record('a', 0, QUIET_WINDOW_MS)).toBeNull();
  });

  it("has a cluster's slots read at most once per SLOT_READ_MS, each cluster on its own, and at once after clear()", () => {
    const p = new ClusterPace();
    expect(p.due('a', 0)).toBe(true);
    p.record('a', 0, 0);
    expect(p.due('a', 1)).toBe(false);
    expect(p.due('a', SLOT_READ_MS - 1)).toBe(false);
    expect(p.due('b', 1)).toBe(true);
    expect(p.due('a', SLOT_READ_MS)).toBe(true);
    p.record('a', 10, SLOT_READ_MS);
    expect(p.due('a', SLOT_READ_MS + 1)).toBe(false);
    p.clear();
    expect(p.due('a', SLOT_READ_MS + 1)).toBe(true);
  });
});

describe('advanceThreshold', () => {
  const base = { maxWal: 64 * MB, quietWal: 1 * MB };
  it('is CAPTURE_IDLE_MAX_WAL on a cluster not known quiet', () => {
    expect(advanceThreshold({ ...base, written: null, floor: 0 })).toEqual({ bytes: 64 * MB, quiet: false });
    expect(advanceThreshold({ ...base, written: 1 * MB, floor: 0 })).toEqual({ bytes: 64 * MB, quiet: false });
    expect(advanceThreshold({ ...base, written: 30 * MB, floor: 0 })).toEqual({ bytes: 64 * MB, quiet: false });
  });
  it('is CAPTURE_IDLE_QUIET_WAL over the slot\'s floor on a quiet cluster, never above CAPTURE_IDLE_MAX_WAL', () => {
    expect(advanceThreshold({ ...base, written: 0, floor: 0 })).toEqual({ bytes: 1 * MB, quiet: true });
    expect(advanceThreshold({ ...base, written: 0.5 * MB, floor: 3 * MB })).toEqual({ bytes: 4 * MB, quiet: true });
    expect(advanceThreshold({ ...base, written: 0, floor: 100 * MB })).toEqual({ bytes: 64 * MB, quiet: true });
  });
  it('is off with CAPTURE_IDLE_QUIET_WAL=0', () => {
    expect(advanceThreshold({ maxWal: 64 * MB, quietWal: 0, written: 0, floor: 0 })).toEqual({ bytes: 64 * MB, quiet: false });
  });
});

describe('SlotFloors', () => {
  it('has no floor for a slot an advance emptied', () => {
    const f = new SlotFloors();
    expect(f.floor('p')).toBe(0);
    f.advanced('p', 0.5 * MB, 1 * MB);
    expect(f.floor('p')).toBe(0);
  });

  it('lets a second advance follow one that did not empty the slot (the first moves restart_lsn one step)', () => {
    const f = new SlotFloors();
    f.advanced('p', 22 * MB, 1 * MB);
    expect(f.floor('p')).toBe(0);
    // the second empties it: no floor, and the next miss is a first again
    f.advanced('p', 0.2 * MB, 1 * MB);
    f.advanced('p', 22 * MB, 1 * MB);
    expect(f.floor('p')).toBe(0);
  });

  it('makes what a second advance left the floor (a transaction held open in the cluster), until one empties it or the project runs', () => {
    const f = new SlotFloors();
    f.advanced('p', 22 * MB, 1 * MB);
    f.advanced('p', 23 * MB, 1 * MB);
    expect(f.floor('p')).toBe(23 * MB);
    // the next pair, once the cluster wrote CAPTURE_IDLE_QUIET_WAL more: its first pass moves
    // restart_lsn one step only, so a second follows; still full after it, a new floor
    f.advanced('p', 24 * MB, 1 * MB);
    expect(f.floor('p')).toBe(0);
    f.advanced('p', 25 * MB, 1 * MB);
    expect(f.floor('p')).toBe(25 * MB);
    f.advanced('p', 26 * MB, 1 * MB);
    expect(f.floor('p')).toBe(0);
    // emptied: the floor goes, and the count of passes starts again (the next miss is a first)
    f.advanced('p', 0.1 * MB, 1 * MB);
    expect(f.floor('p')).toBe(0);
    f.advanced('p', 22 * MB, 1 * MB);
    expect(f.floor('p')).toBe(0);
    f.advanced('p', 23 * MB, 1 * MB);
    expect(f.floor('p')).toBe(23 * MB);
    f.forget('p');
    expect(f.floor('p')).toBe(0);
    f.advanced('q', 22 * MB, 1 * MB);
    f.advanced('q', 22 * MB, 1 * MB);
    expect(f.floor('q')).toBe(22 * MB);
    f.clear();
    expect(f.floor('q')).toBe(0);
  });
});
