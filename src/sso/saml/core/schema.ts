// XSD validation of inbound SAML responses against the SAML 2.0 protocol/assertion, XML-DSig and
// XML-Enc schemas, through samlify's validator hook and libxml2's xmllint compiled to WebAssembly
// (xmllint-wasm: no native build, no JVM). Schema validity is a first filter that throws out
// malformed and many wrapping-style documents early; the structural and signature checks never
// rely on it.
//
// The schemas are the ones @authenio/samlify-xmllint-wasm (samlify's own wasm validator) ships.
// Its validate() is not called: on every refusal it console.debug()s and console.error()s
// xmllint's findings, which quote attacker-controlled text, outside our structured log stream.
// Calling xmllint-wasm with the same schemas gives the same verdict without that output.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import samlify from 'samlify';
import { validateXML, type XMLFileInfo } from 'xmllint-wasm';
import { SamlError } from './errors.js';

const SCHEMA_FILES = ['saml-schema-protocol-2.0.xsd', 'datatypes.dtd', 'saml-schema-assertion-2.0.xsd', 'xmldsig-core-schema.xsd', 'XMLSchema.dtd', 'xenc-schema.xsd'];

let schemas: XMLFileInfo[] | undefined;
function loadSchemas(): XMLFileInfo[] {
  if (!schemas) {
    const dir = path.join(path.dirname(createRequire(import.meta.url).resolve('@authenio/samlify-xmllint-wasm')), 'schemas');
    schemas = SCHEMA_FILES.map((fileName) => ({ fileName, contents: readFileSync(path.join(dir, fileName), 'utf8') }));
  }
  return schemas;
}

async function validate(xml: string): Promise<true> {
  const [main, ...preload] = loadSchemas();
  // xmllint validates the file it is given; a response larger than the default 32 MiB wasm heap is
  // already refused by the size limit before this runs.
  const result = await validateXML({ xml: [{ fileName: 'response.xml', contents: xml }], extension: 'schema', schema: [main], preload });
  if (!result.valid) throw new Error('ERR_EXCEPTION_VALIDATE_XML');
  return true;
}

// samlify keeps the validator in module-global state; registering it on import means no code path
// can reach isValidXml without it (samlify would then reject every message anyway).
samlify.setSchemaValidator({ validate });

export async function assertSchemaValid(xml: string): Promise<void> {
  try {
    await samlify.SamlLib.isValidXml(xml);
  } catch {
    throw new SamlError('invalid_saml_response', 'the response does not conform to the SAML 2.0 schemas');
  }
}
