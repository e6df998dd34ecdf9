// The capture speed's rule (capture-speed.ts). The supervisor counts a project's recent messages
// only up to recentMessagesCap; the rule must decide the same from the capped count as from the
// true one. The real stack's test of the switch is integration/capture-speed.test.ts.
import { describe, expect, it } from 'vitest';
import { recentMessagesCap, wantedSpeed } from '../../../src/outbox/capture-speed.js';

const base = { CAPTURE_SLOW_POLL: 500, CAPTURE_SPEED_WINDOW: 60_000 };

describe('recentMessagesCap', () => {
  it('is one past the larger threshold', () => {
    expect(recentMessagesCap({ CAPTURE_SLOW_AT: 2, CAPTURE_FAST_AT: 6 })).toBe(6);
    expect(recentMessagesCap({ CAPTURE_SLOW_AT: 10, CAPTURE_FAST_AT: 6 })).toBe(11);
    expect(recentMessagesCap({ CAPTURE_SLOW_AT: 0, CAPTURE_FAST_AT: 1 })).toBe(1);
  });

  it('gives the same speed from the capped count as from the true one, for every setting and count', () => {
    for (const slowAt of [0, 1, 2, 5, 6, 10]) {
      for (const fastAt of [1, 2, 6, 7, 20]) {
        const cfg = { ...base, CAPTURE_SLOW_AT: slowAt, CAPTURE_FAST_AT: fastAt };
        const cap = recentMessagesCap(cfg);
        for (const current of ['fast', 'slow'] as const) {
          for (const atSpeed of [0, 60_000]) {
            for (let n = 0; n <= 50; n++) {
              expect(wantedSpeed(cfg, current, Math.min(n, cap), atSpeed), `slowAt ${slowAt} fastAt ${fastAt} ${current} n ${n}`).toBe(
                wantedSpeed(cfg, current, n, atSpeed),
              );
            }
          }
        }
      }
    }
  });
});
