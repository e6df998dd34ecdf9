// Reading a SAML provider's IdP metadata: pasted XML, or a download from metadata_url (on save,
// on PATCH refresh_metadata and on the test endpoint). Failures become the provider errors
// saml_metadata_invalid (unreachable, not metadata, unusable) and saml_metadata_no_signing_cert.
//
// The download goes through the outbound SSRF guard (src/sso/idp-fetch.ts): a setup link's holder
// can set the URL, so only public addresses are reached unless OUTBOUND_ALLOW_CIDRS admits a
// private range; redirects are followed by hand (at most three), each hop checked again. It must
// be https unless SAML_ALLOW_HTTP_METADATA allows http, its size is bounded and it times out.
import { ApiError } from '../../errors.js';
import { guardedGet, IdpFetchError, networkReason } from '../idp-fetch.js';
import { isSamlError, parseIdpMetadata, type IdpMetadata } from './core/index.js';
import type { SsoContext } from '../types.js';

type Cfg = Pick<SsoContext, 'cfg'>;

const MAX_METADATA_BYTES = 1024 * 1024;

const allowHttp = (ctx: Cfg) => ctx.cfg.SAML_ALLOW_HTTP_METADATA ?? ctx.cfg.APP_ENV !== 'production';

/** What is wrong with a metadata URL (or a redirect's target) before anything is fetched; null when fine. */
function urlProblem(ctx: Cfg, u: URL): string | null {
  const ok = u.protocol === 'https:' || (u.protocol === 'http:' && allowHttp(ctx));
  if (!ok) return 'metadata_url must be an https:// URL.';
  if (u.username || u.password) return 'metadata_url must not carry credentials.';
  return null;
}

/** Checks a metadata_url before anything is fetched from it. */
export function checkMetadataUrl(ctx: Cfg, value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new ApiError('validation_failed', 'metadata_url must be an absolute URL.');
  }
  const problem = urlProblem(ctx, u);
  if (problem) throw new ApiError('validation_failed', problem);
  return value;
}

/** What a setup link's holder is told about any failure of a downloaded metadata_url. */
export const GENERIC_METADATA_FAILURE = 'The metadata URL could not be fetched: check it is public and answers with SAML metadata.';

/** Parses metadata XML, mapping the core's errors to the provider error codes. */
export function parseMetadata(xml: string): IdpMetadata {
  try {
    return parseIdpMetadata(xml);
  } catch (e) {
    if (isSamlError(e)) throw new ApiError(e.code, e.message);
    throw e;
  }
}

async function readBounded(res: Response, url: string): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > MAX_METADATA_BYTES) throw tooLarge(url);
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  for (let r = await reader?.read(); r && !r.done; r = await reader!.read()) {
    size += r.value.byteLength;
    if (size > MAX_METADATA_BYTES) {
      await reader!.cancel();
      throw tooLarge(url);
    }
    chunks.push(Buffer.from(r.value));
  }
  return Buffer.concat(chunks).toString('utf8');
}

const tooLarge = (url: string) => new IdpFetchError('saml_metadata_invalid', `The metadata at ${url} is larger than ${MAX_METADATA_BYTES / 1024} KiB.`, GENERIC_METADATA_FAILURE);

/** Downloads metadata_url and parses it; returns the XML too, for callers that compare. */
export async function downloadMetadata(ctx: Cfg, url: string): Promise<{ xml: string; idp: IdpMetadata }> {
  checkMetadataUrl(ctx, url);
  let xml: string;
  try {
    const res = await guardedGet(ctx.cfg, url, {
      headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' },
      timeoutMs: ctx.cfg.SAML_METADATA_TIMEOUT,
      checkHop: (u) => urlProblem(ctx, u),
    });
    if (!res.ok) {
      await res.body?.cancel();
      throw new IdpFetchError('saml_metadata_invalid', `Downloading the metadata from ${url} failed: HTTP ${res.status}.`, GENERIC_METADATA_FAILURE);
    }
    xml = await readBounded(res, url);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    throw new IdpFetchError('saml_metadata_invalid', `Downloading the metadata from ${url} failed: ${networkReason(e)}.`, GENERIC_METADATA_FAILURE);
  }
  try {
    return { xml, idp: parseMetadata(xml) };
  } catch (e) {
    // what the answer was not says something about what answered, so the link holder is not told
    if (e instanceof ApiError) throw new IdpFetchError(e.code, e.message, GENERIC_METADATA_FAILURE);
    throw e;
  }
}
