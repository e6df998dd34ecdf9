// XSD validation of inbound SAML responses against the SAML 2.0 protocol/assertion, XML-DSig and
// XML-Enc schemas, through samlify's validator hook and libxml2's xmllint compiled to JavaScript
// (asm.js via Emscripten: no native build, no JVM). Schema validity is a first filter that throws
// out malformed and many wrapping-style documents early; the structural and signature checks
// never rely on it.
import samlify from 'samlify';
import * as xmllint from '@authenio/samlify-node-xmllint';
import { SamlError } from './errors.js';

// samlify keeps the validator in module-global state; registering it on import means no code path
// can reach isValidXml without it (samlify would then reject every message anyway).
samlify.setSchemaValidator({ validate: (xml: string) => contained(() => xmllint.validate(xml)) });

/**
 * node-xmllint is an old Emscripten build that runs as a whole "program" per validation, and on
 * every run it (1) adds a process 'uncaughtException' listener, (2) arms
 * `process.stdout.once('drain', () => process.exit(status))`, which would kill this server the
 * next time its log pipe drains, and (3) prints a line to stdout (our JSON log stream); the
 * samlify wrapper also console.errors attacker-shaped text on each failure. All of it happens
 * synchronously inside validate() (its promise executor runs the program to completion), so we
 * mute output for exactly that call and remove whatever listeners it added before anything else
 * can run. A unit test guards this; swapping in @authenio/samlify-xmllint-wasm would remove it.
 */
function contained<T>(run: () => T): T {
  const uncaughtBefore = new Set(process.listeners('uncaughtException'));
  const drainBefore = new Set(process.stdout.listeners('drain'));
  const saved = { out: process.stdout.write, err: process.stderr.write, log: console.log, error: console.error };
  process.stdout.write = process.stderr.write = () => true;
  console.log = console.error = () => {};
  try {
    return run();
  } finally {
    Object.assign(process.stdout, { write: saved.out });
    Object.assign(process.stderr, { write: saved.err });
    Object.assign(console, { log: saved.log, error: saved.error });
    for (const l of process.listeners('uncaughtException')) if (!uncaughtBefore.has(l)) process.removeListener('uncaughtException', l);
    for (const l of process.stdout.listeners('drain')) if (!drainBefore.has(l)) process.stdout.removeListener('drain', l as () => void);
  }
}

export async function assertSchemaValid(xml: string): Promise<void> {
  try {
    await samlify.SamlLib.isValidXml(xml);
  } catch {
    throw new SamlError('invalid_saml_response', 'the response does not conform to the SAML 2.0 schemas');
  }
}
