import { describe, expect, it } from 'vitest';
import { candidateDomains, emailDomain, mostSpecific, normalizeDomain } from '../../../src/sso/sign-in/domain-routing.js';

describe('normalizeDomain', () => {
  it('lower-cases and drops a trailing dot', () => {
    expect(normalizeDomain(' Acme.COM. ')).toBe('acme.com');
    expect(normalizeDomain('xn--bcher-kva.example')).toBe('xn--bcher-kva.example');
  });
  it('refuses what is not a hostname of two labels or more', () => {
    for (const bad of ['', 'com', 'acme..com', '-acme.com', 'acme-.com', 'ac me.com', 'acme.com/x', '*.acme.com', '10.0.0.1', 'a_b.com', `${'a'.repeat(64)}.com`, 'user@acme.com']) {
      expect(normalizeDomain(bad), bad).toBeNull();
    }
  });
});

describe('emailDomain', () => {
  it('takes the part after the last @', () => {
    expect(emailDomain('Alice@Sub.Acme.com')).toBe('sub.acme.com');
    expect(emailDomain('"a@b"@acme.com')).toBe('acme.com');
    expect(emailDomain('acme.com')).toBeNull();
    expect(emailDomain('@acme.com')).toBeNull();
  });
});

describe('routing', () => {
  it('lists the domain and its parents, never the bare top-level label', () => {
    expect(candidateDomains('a.b.acme.com')).toEqual(['a.b.acme.com', 'b.acme.com', 'acme.com']);
    expect(candidateDomains('acme.com')).toEqual(['acme.com']);
  });
  it('picks the most specific match and ignores look-alikes', () => {
    const entries = [{ domain: 'acme.com', p: 1 }, { domain: 'eu.acme.com', p: 2 }, { domain: 'notacme.com', p: 3 }];
    expect(mostSpecific('acme.com', entries)?.p).toBe(1);
    expect(mostSpecific('us.acme.com', entries)?.p).toBe(1);
    expect(mostSpecific('eu.acme.com', entries)?.p).toBe(2);
    expect(mostSpecific('x.eu.acme.com', entries)?.p).toBe(2);
    expect(mostSpecific('notacme.com', entries)?.p).toBe(3);
    expect(mostSpecific('xacme.com', entries)).toBeUndefined();
    expect(mostSpecific('com', entries)).toBeUndefined();
  });
});
