import { describe, expect, it } from 'vitest';
import { TtlCache } from '../../../src/lib/ttl-cache.js';

describe('TtlCache', () => {
  it('loads missing keys in one call, shares concurrent loads and caches misses', async () => {
    const calls: string[][] = [];
    const load = async (keys: string[]) => {
      calls.push(keys);
      await new Promise((r) => setTimeout(r, 10));
      return new Map(keys.filter((k) => k !== 'gone').map((k) => [k, k.toUpperCase()]));
    };
    const c = new TtlCache<string>(60_000);
    const [a, b] = await Promise.all([c.getMany(['x', 'y', 'gone'], load), c.getMany(['x'], load)]);
    expect(Object.fromEntries(a)).toEqual({ x: 'X', y: 'Y', gone: null });
    expect(b.get('x')).toBe('X');
    expect(await c.get('gone', load)).toBeNull();
    expect(calls).toEqual([['x', 'y', 'gone']]);
  });

  it('reloads after the TTL, and does not cache a failed load', async () => {
    let n = 0;
    const c = new TtlCache<number>(20);
    const load = async (keys: string[]) => new Map(keys.map((k) => [k, ++n]));
    expect(await c.get('k', load)).toBe(1);
    expect(await c.get('k', load)).toBe(1);
    await new Promise((r) => setTimeout(r, 30));
    expect(await c.get('k', load)).toBe(2);
    await expect(c.get('e', async () => Promise.reject(new Error('db down')))).rejects.toThrow('db down');
    expect(await c.get('e', load)).toBe(3);
  });
});
