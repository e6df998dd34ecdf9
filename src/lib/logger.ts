import { pino, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';

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

export type LogFormat = 'auto' | 'json' | 'pretty';

/** `auto` is pretty only for a person at a terminal; pipes, files and collectors get JSON. */
export function resolveLogFormat(format: LogFormat, isTTY = Boolean(process.stdout.isTTY)): 'json' | 'pretty' {
  return format === 'auto' ? (isTTY ? 'pretty' : 'json') : format;
}

/** `to`: stdout (default), or stderr for commands whose stdout is their output. */
export function createLogger(level: string, opts: { name?: string; format?: LogFormat; to?: 'stdout' | 'stderr' } = {}): Logger {
  const fd = opts.to === 'stderr' ? 2 : 1;
  const isTTY = Boolean((fd === 2 ? process.stderr : process.stdout).isTTY);
  const options = {
    name: opts.name ?? 'integrations',
    level,
    redact: { paths: REDACT, censor: '[redacted]' },
    serializers: {
      req: (req: { id: string; method: string; url: string; ip: string }) => ({ id: req.id, method: req.method, url: String(req.url).split('?')[0], remoteAddress: req.ip }),
    },
  };
  if (resolveLogFormat(opts.format ?? 'json', isTTY) === 'json') return pino(options, pino.destination({ fd, sync: true }));
  // Synchronous on the main thread (no transport worker): a fatal line is on the screen before exit.
  // Redaction runs before formatting, so the pretty output hides what the JSON hides.
  const pretty = PinoPretty({
    colorize: isTTY,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name',
    singleLine: true,
    destination: fd,
  });
  return pino(options, pretty);
}

export type { Logger };
