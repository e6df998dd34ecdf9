// The suite's SAML IdP (saml-idp.ts) behind a real HTTP server, for tests that drive a browser:
// GET /metadata publishes its metadata; GET /sso takes our HTTP-Redirect AuthnRequest and shows a
// sign-in page whose "Continue" button posts a freshly signed SAMLResponse to the ACS the request
// names (the HTTP-POST binding, as real IdPs do). `answer` says who signs in and which rule to
// break (audience, recipient, clock...), so a test can make one sign-in fail on purpose.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readAuthnRequest, type ResponseOptions, type TestIdp } from './saml-idp.js';

export type Answer = Omit<ResponseOptions, 'sp' | 'requestId'>;

export interface SamlIdpServer {
  url: string;
  metadataUrl: string;
  ssoUrl: string;
  /** what the next sign-ins answer */
  answer: Answer;
  /** AuthnRequests received (their IDs) */
  requests: string[];
  stop(): Promise<void>;
}

const html = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** `makeIdp(ssoUrl)` builds the TestIdp once the server's address (its SSO URL) is known. */
export async function startSamlIdpServer(makeIdp: (ssoUrl: string) => TestIdp, answer: Answer): Promise<SamlIdpServer> {
  let idp: TestIdp | undefined;
  const state = { answer, requests: [] as string[] };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://idp');
    if (url.pathname === '/metadata') {
      res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' });
      return res.end(idp!.metadataXml());
    }
    if (url.pathname === '/sso') {
      const request = readAuthnRequest(`http://idp${req.url}`);
      state.requests.push(request.id);
      // the SP's values come from its request, as an IdP configured from our metadata would have them
      const sp = { entityId: request.issuer, acsUrl: request.acsUrl };
      const samlResponse = idp!.signedResponse({ sp, requestId: request.id, ...state.answer });
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(
        `<!doctype html><meta charset="utf-8"><title>Test IdP</title><h1>Test IdP</h1><p>Signing in as ${html(state.answer.nameId)}</p>` +
          `<form method="post" action="${html(request.acsUrl)}"><input type="hidden" name="SAMLResponse" value="${html(samlResponse)}">` +
          `<input type="hidden" name="RelayState" value="${html(request.relayState ?? '')}"><button type="submit">Continue</button></form>`,
      );
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  idp = makeIdp(`${base}/sso`);
  return Object.assign(state, {
    url: base,
    metadataUrl: `${base}/metadata`,
    ssoUrl: `${base}/sso`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
