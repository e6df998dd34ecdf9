// Reading a SAML provider's IdP metadata: pasted XML, or a download from metadata_url (on save,
// on PATCH refresh_metadata and on the test endpoint). Failures become the provider errors
// saml_metadata_invalid (unreachable, not metadata, unusable) and saml_metadata_no_signing_cert.
//
// Like OIDC discovery, the download does not go through the SSRF guard of webhook deliveries: the
// URL is set by the project owner (not by data in their database) and company IdPs often sit on
// private networks. It must be https unless SAML_ALLOW_HTTP_METADATA allows http, its size is
// bounded and it times out.
import { ApiError } from '../../errors.js';
import { isSamlError, parseIdpMetadata, type IdpMetadata } from './core/index.js';
import type { SsoContext } from '../types.js';

type Cfg = Pick<SsoContext, 'cfg'>;

const MAX_METADATA_BYTES = 1024 * 1024;

const allowHttp = (ctx: Cfg) => ctx.cfg.SAML_ALLOW_HTTP_METADATA ?? ctx.cfg.APP_ENV !== 'production';

/** Checks a metadata_url before anything is fetched from it. */
export function checkMetadataUrl(ctx: Cfg, value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new ApiError('validation_failed', 'metadata_url must be an absolute URL.');
  }
  const ok = u.protocol === 'https:' || (u.protocol === 'http:' && allowHttp(ctx));
  if (!ok) throw new ApiError('validation_failed', 'metadata_url must be an https:// URL.');
  if (u.username || u.password) throw new ApiError('validation_failed', 'metadata_url must not carry credentials.');
  return value;
}

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

const tooLarge = (url: string) => new ApiError('saml_metadata_invalid', `The metadata at ${url} is larger than ${MAX_METADATA_BYTES / 1024} KiB.`);

/** Downloads metadata_url and parses it; returns the XML too, for callers that compare. */
export async function downloadMetadata(ctx: Cfg, url: string): Promise<{ xml: string; idp: IdpMetadata }> {
  checkMetadataUrl(ctx, url);
  let xml: string;
  try {
    const res = await fetch(url, {
      headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' },
      signal: AbortSignal.timeout(ctx.cfg.SAML_METADATA_TIMEOUT),
    });
    if (!res.ok) {
      await res.body?.cancel();
      throw new ApiError('saml_metadata_invalid', `Downloading the metadata from ${url} failed: HTTP ${res.status}.`);
    }
    xml = await readBounded(res, url);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    const why = err.name === 'TimeoutError' ? 'timed out' : (err.cause?.code ?? err.cause?.message ?? err.message ?? 'unknown error');
    throw new ApiError('saml_metadata_invalid', `Downloading the metadata from ${url} failed: ${why}.`);
  }
  return { xml, idp: parseMetadata(xml) };
}
