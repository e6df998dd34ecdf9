// SAML timestamps (xs:dateTime, saml-core 1.3.3) and validity windows with a clock-skew allowance.
import { SamlError } from './errors.js';

// Date.parse accepts many non-ISO shapes; a SAML peer sends ISO 8601 with a zone (normally Z).
const XS_DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export function parseSamlTime(value: string, what: string): Date {
  const ms = XS_DATETIME.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new SamlError('invalid_saml_response', `${what} is not a valid timestamp`);
  return new Date(ms);
}

/**
 * Refuses when `now` lies outside [notBefore, notOnOrAfter), each end widened by `skewMs` so that
 * small clock differences between IdP and SP do not fail sign-ins.
 */
export function checkWindow(window: { notBefore?: Date; notOnOrAfter?: Date }, now: Date, skewMs: number, what: string): void {
  if (window.notBefore && now.getTime() + skewMs < window.notBefore.getTime()) {
    throw new SamlError('invalid_saml_response', `${what} is not yet valid (NotBefore ${window.notBefore.toISOString()})`);
  }
  if (window.notOnOrAfter && now.getTime() - skewMs >= window.notOnOrAfter.getTime()) {
    throw new SamlError('invalid_saml_response', `${what} has expired (NotOnOrAfter ${window.notOnOrAfter.toISOString()})`);
  }
}
