// XSD validation of inbound SAML responses against the SAML 2.0 protocol/assertion, XML-DSig and
// XML-Enc schemas, through samlify's validator hook and the xmllint build compiled to WebAssembly
// (no native build, no JVM). Schema validity is a first filter that throws out malformed and many
// wrapping-style documents early; the structural and signature checks never rely on it.
import samlify from 'samlify';
import * as xmllint from '@authenio/samlify-node-xmllint';
import { SamlError } from './errors.js';

// samlify keeps the validator in module-global state; registering it on import means no code path
// can reach isValidXml without it (samlify would then reject every message anyway).
samlify.setSchemaValidator({ validate: xmllint.validate });

export async function assertSchemaValid(xml: string): Promise<void> {
  try {
    await samlify.SamlLib.isValidXml(xml);
  } catch {
    throw new SamlError('invalid_saml_response', 'the response does not conform to the SAML 2.0 schemas');
  }
}
