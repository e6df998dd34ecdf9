// XSD validation of inbound SAML responses against the SAML 2.0 protocol/assertion, XML-DSig and
// XML-Enc schemas, through samlify's validator hook and the xmllint build compiled to WebAssembly
// (no native build, no JVM). Schema validity is a first filter that throws out malformed and many
// wrapping-style documents early; the structural and signature checks never rely on it.
import samlify from 'samlify';
import * as xmllint from '@authenio/samlify-node-xmllint';
import { SamlError } from './errors.js';

// samlify keeps the validator in module-global state; registering it on import means no code path
// can reach isValidXml without it (samlify would then reject every message anyway).
samlify.setSchemaValidator({ validate: (xml: string) => silenced(() => xmllint.validate(xml)) });

/**
 * The WebAssembly xmllint writes a blank line to stdout on every run, and the wrapper prints each
 * failure (attacker-shaped text) with console.error; stdout is our JSON log stream. Both happen
 * synchronously inside validate() (its promise executor), so muting them for exactly that call
 * cannot swallow anyone else's output.
 */
function silenced<T>(run: () => T): T {
  const write = process.stdout.write;
  const error = console.error;
  process.stdout.write = () => true;
  console.error = () => {};
  try {
    return run();
  } finally {
    process.stdout.write = write;
    console.error = error;
  }
}

export async function assertSchemaValid(xml: string): Promise<void> {
  try {
    await samlify.SamlLib.isValidXml(xml);
  } catch {
    throw new SamlError('invalid_saml_response', 'the response does not conform to the SAML 2.0 schemas');
  }
}
