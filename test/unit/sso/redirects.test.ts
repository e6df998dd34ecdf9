import { describe, expect, it } from 'vitest';
import { isAllowedRedirect, resolveRedirect, withQuery } from '../../../src/sso/sign-in/redirects.js';

const policy = { site_url: 'https://app.example.com/portal', additional_redirect_urls: ['https://admin.example.com/cb', 'https://*.preview.example.com/**', 'http://localhost:5173/*'] };

describe('redirect allow-list', () => {
  it('allows the site URL, paths under it, exact additional URLs and globs', () => {
    for (const ok of [
      'https://app.example.com/portal',
      'https://app.example.com/portal/auth/callback?x=1',
      'https://admin.example.com/cb',
      'https://pr-12.preview.example.com/',
      'https://pr-12.preview.example.com/a/b?c=d',
      'http://localhost:5173/callback',
    ]) {
      expect(isAllowedRedirect(policy, ok), ok).toBe(true);
    }
  });

  it('refuses everything else, including look-alikes and tricks', () => {
    for (const bad of [
      'https://app.example.com/portalx',
      'https://app.example.com/other',
      'http://app.example.com/portal',
      'https://app.example.com.evil.test/portal',
      'https://admin.example.com/cb/extra',
      'https://evil.test/?.preview.example.com/',
      'https://evil.test#.preview.example.com/',
      'https://a.b.preview.example.com/',
      'https://user:pw@admin.example.com/cb',
      'http://localhost:5173/a/b',
      'javascript:alert(1)',
      '//evil.test',
      '/relative',
      'not a url',
    ]) {
      expect(isAllowedRedirect(policy, bad), bad).toBe(false);
    }
  });

  it('falls back to the site URL', () => {
    expect(resolveRedirect(policy, 'https://evil.test/')).toBe(policy.site_url);
    expect(resolveRedirect(policy, undefined)).toBe(policy.site_url);
    expect(resolveRedirect(policy, 'https://admin.example.com/cb')).toBe('https://admin.example.com/cb');
  });

  it('adds parameters while keeping the existing query', () => {
    expect(withQuery('https://a.test/cb?next=%2Fx', { code: 'c&d' })).toBe('https://a.test/cb?next=%2Fx&code=c%26d');
  });
});
