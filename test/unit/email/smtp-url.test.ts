// SMTP_URL parsing for the platform default, and the pool key never carrying the password.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { parseSmtpUrl, platformRoute } from '../../../src/email/transport.js';

describe('platform SMTP_URL', () => {
  it('reads smtp:// as STARTTLS-capable on 587 and smtps:// as implicit TLS on 465', () => {
    expect(parseSmtpUrl('smtp://mail.example.com')).toEqual({ host: 'mail.example.com', port: 587, secure: false, auth: undefined });
    expect(parseSmtpUrl('smtps://mail.example.com')).toMatchObject({ port: 465, secure: true });
    expect(parseSmtpUrl('smtp://[::1]:2525')).toMatchObject({ host: '::1', port: 2525 });
  });

  it('percent-decodes the credentials', () => {
    expect(parseSmtpUrl('smtp://api%40key:p%3Ass%2Fw@mail.example.com:25').auth).toEqual({ user: 'api@key', pass: 'p:ss/w' });
  });

  it('keys the pool by a digest, never by the URL', () => {
    const cfg = loadConfig({ APP_ENV: 'test', LOG_LEVEL: 'silent', SMTP_URL: 'smtp://u:sup3r-secret@mail.example.com', MASTER_KEY: Buffer.alloc(32, 1).toString('base64') });
    const route = platformRoute(cfg)!;
    expect(route.source).toBe('platform');
    expect(route.key).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.stringify(route)).not.toContain('sup3r-secret');
  });

  it('refuses an SMTP_URL that is not smtp:// or smtps:// without echoing it', () => {
    expect(() => loadConfig({ APP_ENV: 'test', SMTP_URL: 'http://u:sup3r-secret@x', MASTER_KEY: Buffer.alloc(32, 1).toString('base64') })).toThrow(/SMTP_URL: must be smtp:/);
    try {
      loadConfig({ APP_ENV: 'test', SMTP_URL: 'http://u:sup3r-secret@x', MASTER_KEY: Buffer.alloc(32, 1).toString('base64') });
    } catch (e) {
      expect((e as Error).message).not.toContain('sup3r-secret');
    }
  });
});
