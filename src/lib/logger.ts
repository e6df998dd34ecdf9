import { pino, type Logger } from 'pino';

// Anything that can carry a credential is redacted wherever it appears in a log object. Secret
// values themselves are never put in log objects in the first place; this is the second line.
const REDACT = [
  'req.headers.authorization',
  'req.headers.apikey',
  'req.headers.cookie',
  'headers.authorization',
  '*.password',
  '*.client_secret',
  '*.signing_secret',
  '*.value',
  '*.secret',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.code_verifier',
  '*.SAMLResponse',
  'password',
  'client_secret',
  'signing_secret',
];

export function createLogger(level: string, name = 'integrations'): Logger {
  return pino({
    name,
    level,
    redact: { paths: REDACT, censor: '[redacted]' },
    serializers: {
      req: (req) => ({ id: req.id, method: req.method, url: String(req.url).split('?')[0], remoteAddress: req.ip }),
    },
  });
}

export type { Logger };
