// The Assertion Consumer Service: what happens to a SAMLResponse the IdP had the browser POST to a
// provider's ACS URL. In order:
//  1. the flow is taken by its RelayState (single use, so a second POST of the same form finds
//     nothing) and must belong to this provider and not be expired;
//  2. the SAML core verifies the response against the provider's stored metadata and the flow's
//     AuthnRequest ID (signature on the assertion, issuer, destination, recipient, audience,
//     InResponseTo, validity window, status, email NameID; see core/verify-response.ts);
//  3. the response and assertion IDs are recorded in saml_replay until the assertion can no longer
//     be valid, and an ID seen before is refused, whichever flow carried it;
//  4. the assertion's attributes are mapped and the shared completion signs the user in.
// Any refusal sends the browser to the flow's redirect_to (or the site URL when no flow is known)
// with ?error=invalid_saml_response and a reason, and logs the reason; never the response itself.
import type { FastifyBaseLogger } from 'fastify';
import { sha256 } from '../../lib/tokens.js';
import type { AttributeMapping, SignInClaims } from '../sign-in/attribute-mapping.js';
import type { AuthProject, FlowRow, ProviderRow, SsoContext } from '../types.js';
import { consumeFlow } from '../sign-in/flows.js';
import { getProvider } from '../providers/store.js';
import { isSamlError, mapSamlAttributes, verifySamlResponse, type VerifiedAssertion } from './core/index.js';
import { spConfig, storedIdp } from './settings.js';
import { completeSignIn, failureRedirect } from '../sign-in/complete.js';
import { explainSaml } from '../setup/explain.js';
import { finishTest, setupValues } from '../setup/test-flow.js';

/** A refusal: where the browser goes and what is logged; `reason` is the SAML core's own text, if any. */
class Refusal extends Error {
  constructor(
    readonly redirectTo: string,
    readonly description: string,
    readonly reason?: string,
  ) {
    super(description);
  }
}

/** The ACS step for one POST; resolves to the address the browser is sent to (303). */
export async function consumeSamlResponse(
  ctx: SsoContext,
  requestLog: FastifyBaseLogger,
  args: { project: AuthProject; providerId: string; samlResponse?: string; relayState?: string },
): Promise<string> {
  const { project } = args;
  const log = requestLog.child({ project: project.ref, provider: args.providerId });
  let flow: FlowRow | null = null;
  let provider: ProviderRow | null = null;
  try {
    flow = await takeFlow(ctx, project, args.providerId, args.relayState);
    provider = await samlProvider(ctx, project, flow);
    if (!args.samlResponse) throw new Refusal(flow.redirect_to, 'The identity provider posted no usable SAML response form (SAMLResponse and RelayState).');
    const verified = await verify(ctx, flow, provider, args.samlResponse);
    await recordOnce(ctx, provider.id, verified, flow.redirect_to);
    log.info({ flow: flow.id, assertion: verified.assertionId }, 'saml response accepted');
    const claims = toClaims(verified, provider.attribute_mapping);
    // a setup link's test sign-in ends on the setup page: no user, no session
    if (flow.setup_link_id) return await finishTest(ctx, log, flow, provider, { ok: true, claims });
    return await completeSignIn(ctx, flow, provider, claims);
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    log.info({ reason: e.description }, 'saml response refused');
    if (flow?.setup_link_id && provider) {
      const values = setupValues(ctx, project.ref, provider, provider.domains);
      return finishTest(ctx, log, flow, provider, { ok: false, explanation: explainSaml(e.reason ?? e.description, values) });
    }
    return failureRedirect(e.redirectTo, 'invalid_saml_response', e.description);
  }
}

async function takeFlow(ctx: SsoContext, project: AuthProject, providerId: string, relayState: string | undefined): Promise<FlowRow> {
  const flow = relayState ? await consumeFlow(ctx, project.ref, 'relay_state_hash', sha256(relayState)) : null;
  if (!flow) {
    // Unknown, already used, or IdP-initiated (no RelayState of ours): nothing to bind the answer to.
    throw new Refusal(project.site_url, 'The sign-in attempt is unknown or was already used (IdP-initiated sign-in is not supported); start again from the application.');
  }
  if (flow.provider_id !== providerId) throw new Refusal(flow.redirect_to, 'The SAML response arrived at the ACS of another provider than the sign-in was started with.');
  if (flow.expired) throw new Refusal(flow.redirect_to, 'The sign-in attempt expired; start again.');
  return flow;
}

/** A live provider; for a setup link's test sign-in, its draft (never routed to by real sign-ins). */
function usable(provider: ProviderRow | null, flow: FlowRow): provider is ProviderRow {
  if (!provider || provider.kind !== 'saml') return false;
  return provider.enabled || (!!flow.setup_link_id && provider.draft);
}

async function samlProvider(ctx: SsoContext, project: AuthProject, flow: FlowRow): Promise<ProviderRow> {
  const provider = await getProvider(ctx.db, project.ref, flow.provider_id);
  if (!usable(provider, flow)) throw new Refusal(flow.redirect_to, 'The identity provider is no longer enabled.');
  return provider;
}

async function verify(ctx: SsoContext, flow: FlowRow, provider: ProviderRow, samlResponse: string): Promise<VerifiedAssertion> {
  const idp = storedIdp(provider);
  if (!idp || !flow.saml_request_id) throw new Refusal(flow.redirect_to, 'The SAML provider has no usable IdP metadata.');
  try {
    return await verifySamlResponse(samlResponse, {
      sp: spConfig(ctx, provider),
      idp,
      requestId: flow.saml_request_id,
      clockSkewMs: ctx.cfg.SAML_CLOCK_SKEW,
    });
  } catch (e) {
    // The core's reasons are its own fixed texts (IdP status codes are reduced to URI characters),
    // so they can be shown to the IdP admin debugging a setup; the cap keeps a reason that names an
    // attacker's absurdly long element name from bloating the redirect.
    if (isSamlError(e)) throw new Refusal(flow.redirect_to, `The SAML response was refused: ${e.message.slice(0, 300)}.`, e.message.slice(0, 300));
    // A library tripping over a hostile document is still a refused response, not a server error.
    ctx.log.warn({ err: e, provider: provider.id, flow: flow.id }, 'saml response verification failed unexpectedly');
    throw new Refusal(flow.redirect_to, 'The SAML response was refused: it could not be processed.');
  }
}

/**
 * Both IDs are kept until the assertion expires plus the clock skew (after that the time checks
 * refuse it anyway). The flow is already single-use; this also stops an intercepted response from
 * being posted with another flow's RelayState, and an assertion from being re-wrapped in a new
 * response.
 */
async function recordOnce(ctx: SsoContext, providerId: string, v: VerifiedAssertion, redirectTo: string): Promise<void> {
  const until = new Date(v.notOnOrAfter.getTime() + ctx.cfg.SAML_CLOCK_SKEW);
  const r = await ctx.db.query(
    `insert into saml_replay (provider_id, message_id, expires_at) values ($1, $2, $4), ($1, $3, $4) on conflict do nothing`,
    [providerId, v.responseId, v.assertionId, until],
  );
  ctx.db.query('delete from saml_replay where expires_at < now()').catch((err) => ctx.log.warn({ err }, 'could not delete expired saml replay records'));
  if (r.rowCount !== 2) throw new Refusal(redirectTo, 'The SAML response was refused: it was already used (replay).', 'the response InResponseTo was already used (replay)');
}

/** Own properties only, so an attribute mapping naming "constructor" reads nothing. */
const firstValue = (v: VerifiedAssertion, name: string | undefined) =>
  name !== undefined && Object.hasOwn(v.attributes, name) ? (v.attributes[name][0]?.trim() ?? null) || null : null;

/**
 * The SAML defaults of docs/sso-saml.md ("Attribute mapping") via the core's mapping (email, else
 * the NameID; givenName + surname, or displayName). SAML has no standard "email verified"
 * attribute: the email counts as verified only when the owner maps one (value "true") or sets
 * trust_email on the provider.
 */
export function toClaims(v: VerifiedAssertion, mapping: AttributeMapping): SignInClaims {
  const m = mapSamlAttributes(v, mapping);
  const verified = firstValue(v, mapping.email_verified)?.toLowerCase();
  return {
    // the NameID is an email address (the core enforces the format); case is not significant in it
    subject: v.nameId.toLowerCase(),
    email: m.email?.toLowerCase() ?? null,
    email_verified: verified === 'true' || verified === '1',
    name: m.name,
    first_name: m.first_name,
    last_name: m.last_name,
    image: firstValue(v, mapping.image),
    extra: m.extra,
    raw: { ...v.attributes, name_id: v.nameId, name_id_format: v.nameIdFormat, issuer: v.issuer, ...(v.sessionIndex ? { session_index: v.sessionIndex } : {}) },
  };
}
