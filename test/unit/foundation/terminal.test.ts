// What a person at a terminal sees: log format choice, kafkajs's retried errors kept out of
// error level, and the port probe. (Start, signals and the busy-port exit run against the real
// service in test/integration/first-run.test.ts.)
import net from 'node:net';
import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaLogLevel, RETRIABLE_PROTOCOL_ERRORS } from '../../../src/kafka/client.js';
import { resolveLogFormat } from '../../../src/lib/logger.js';
import { busyPorts, probePort } from '../../../src/lib/ports.js';

describe('log format', () => {
  it('auto is pretty at a terminal and JSON otherwise; json and pretty are taken as said', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });
});

describe('kafkajs log levels', () => {
  const loading = "The coordinator is loading and hence can't process requests for this group";
  it('knows the retriable protocol errors of the installed kafkajs', () => {
    expect(RETRIABLE_PROTOCOL_ERRORS.has(loading)).toBe(true);
    expect(RETRIABLE_PROTOCOL_ERRORS.size).toBeGreaterThan(10);
  });
  it('a failed response kafkajs will retry is debug; anything else keeps its level', () => {
    expect(kafkaLogLevel(logLevel.ERROR, { message: 'Response FindCoordinator(key: 10, version: 2)', error: loading })).toBe('debug');
    expect(kafkaLogLevel(logLevel.ERROR, { message: 'Response Produce(key: 0, version: 7)', error: 'Broker: Message size too large' })).toBe('error');
    expect(kafkaLogLevel(logLevel.ERROR, { message: '[Consumer] Crash: KafkaJSNumberOfRetriesExceeded', error: loading })).toBe('error');
    expect(kafkaLogLevel(logLevel.WARN, { message: 'something else' })).toBe('warn');
  });
});

describe('port probe', () => {
  it('names a busy port, its key and the way out; free ports and port 0 pass', async () => {
    const held = net.createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    const port = (held.address() as net.AddressInfo).port;
    try {
      expect(await probePort('127.0.0.1', port)).toBe('EADDRINUSE');
      const lines = await busyPorts([
        { what: 'API', key: 'PORT', host: '127.0.0.1', port },
        { what: 'metrics', key: 'METRICS_PORT', host: '127.0.0.1', port: 0 },
      ]);
      expect(lines).toEqual([`port ${port} on 127.0.0.1 (API, PORT) is already in use — is another instance running? Stop it, or start this one on another port: PORT=${port + 1} npm start`]);
    } finally {
      await new Promise((r) => held.close(r));
    }
    expect(await probePort('127.0.0.1', port)).toBeNull();
    expect(await busyPorts([{ what: 'API', key: 'PORT', host: '192.0.2.1', port: 8000 }])).toEqual([expect.stringContaining('192.0.2.1 is not an address of this machine')]);
  });
});
