// The SSO setup page a setup link opens (docs/sso.md, "Setup links"), for the customer's IT admin:
// the values to enter at the IdP, the IdP's side, a test sign-in, and activation. Everything it
// shows from metadata or an IdP's answer goes through Preact's text rendering (escaped), never HTML.
import { useEffect, useState } from 'preact/hooks';
import { ApiFailure } from '../api';
import { ErrorNote, Loading, Notice, when } from '../ui/feedback';
import { forgetSecret, setupApi, takeSecretFromUrl } from './link';
import { IdpForm } from './idp-form';
import { SpValues } from './sp-values';
import { TestResultView } from './test-result';
import type { Draft, SetupInfo, TestResult } from './types';

/** An unusable link: a clear page in plain words, with the service's code, never a trace. */
function LinkProblem({ title, message, code }: { title: string; message: string; code?: string }) {
  return (
    <section class="sign-in" aria-labelledby="link-problem">
      <div class="card panel">
        <h1 id="link-problem">{title}</h1>
        <p>{message}</p>
        {code && (
          <p class="small">
            <code>{code}</code>
          </p>
        )}
      </div>
    </section>
  );
}

const GONE_TITLES: Record<string, string> = { expired: 'This setup link has expired', revoked: 'This setup link was revoked', used: 'This setup link was already used' };

function goneTitle(e: ApiFailure): string {
  const state = /expired|revoked|used/.exec(e.message)?.[0];
  return (state && GONE_TITLES[state]) ?? 'This setup link cannot be used';
}

export function SetupApp() {
  const [secret] = useState(takeSecretFromUrl);
  const [info, setInfo] = useState<SetupInfo>();
  const [failure, setFailure] = useState<ApiFailure>();
  const [kind, setKind] = useState<'saml' | 'oidc'>('saml');
  const [test, setTest] = useState<TestResult>();
  const [flowError, setFlowError] = useState<string>();
  const [busy, setBusy] = useState<string>();
  const [actionError, setActionError] = useState<ApiFailure>();
  const [activated, setActivated] = useState<{ provider: Draft; owner_notified: boolean; warnings?: { message: string }[] }>();

  const load = async () => {
    if (!secret) return;
    try {
      const i = await setupApi<SetupInfo>(secret, 'GET', '');
      setInfo(i);
      setKind(i.provider?.kind ?? (i.link.kind === 'oidc' ? 'oidc' : 'saml'));
    } catch (e) {
      setFailure(e as ApiFailure);
    }
  };

  useEffect(() => {
    if (!secret) return;
    // back from the IdP: the test's result id (or an error) is in the query; read it, then drop it
    const q = new URLSearchParams(location.search);
    const testId = q.get('test');
    const error = q.get('error_description');
    if (testId || error) history.replaceState(null, '', location.pathname);
    if (error) setFlowError(error);
    if (testId === 'gone') setFlowError('The test sign-in came back after this link stopped working.');
    else if (testId) setupApi<TestResult>(secret, 'GET', `/tests/${encodeURIComponent(testId)}`).then(setTest, (e) => setActionError(e as ApiFailure));
    void load();
  }, []);

  if (!secret) return <LinkProblem title="This page needs the whole setup link" message="Open the complete link you were sent (it ends with a long code after a #). Ask the owner of the service for a new link if you no longer have it." />;
  if (failure) {
    if (failure.status === 410) return <LinkProblem title={goneTitle(failure)} message={failure.message} code={failure.code} />;
    if (failure.status === 404) return <LinkProblem title="This setup link is not valid" message={failure.message} code={failure.code} />;
    return <LinkProblem title="The setup page could not load" message={failure.message} code={failure.code} />;
  }
  if (activated) {
    forgetSecret();
    return (
      <main id="main" class="setup">
        <h1>Single sign-on is active</h1>
        <Notice kind="success">
          Users of {activated.provider.domains.join(', ')} now sign in through {activated.provider.name}.{' '}
          {activated.owner_notified ? 'The owner of the service has been notified by email.' : 'The owner of the service sees it in their audit trail.'} This link no longer works.
        </Notice>
        {!!activated.warnings?.length && (
          <Notice kind="warning">
            <ul>
              {activated.warnings.map((w) => (
                <li key={w.message}>{w.message}</li>
              ))}
            </ul>
          </Notice>
        )}
      </main>
    );
  }
  if (!info) return <Loading what="Loading the setup link" />;

  const run = async (what: string, fn: () => Promise<void>) => {
    setBusy(what);
    setActionError(undefined);
    try {
      await fn();
    } catch (e) {
      setActionError(e as ApiFailure);
    } finally {
      setBusy(undefined);
    }
  };
  const startTest = () =>
    run('test', async () => {
      const { url } = await setupApi<{ url: string }>(secret, 'POST', '/test');
      location.assign(url);
    });
  const activate = () =>
    run('activate', async () => {
      if (!confirm(`Activate single sign-on for ${info.link.domains.join(', ')}? Users of these domains will sign in through this IdP from now on.`)) return;
      setActivated(await setupApi(secret, 'POST', '/activate'));
    });
  const provider = info.provider;
  const testIsCurrent = !!test && test.current;

  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">
          Single sign-on <span>setup</span>
        </span>
        <span class="small">This link works until {when(info.link.expires_at)}</span>
      </header>
      <main id="main" class="setup" tabIndex={-1}>
        <h1>Set up single sign-on for {info.link.domains.join(', ')}</h1>
        <p class="lead">
          You were sent this page to connect your identity provider (IdP). Enter the values below at your IdP, enter your IdP's side here, run a test sign-in, and activate. Nothing is switched on
          before you activate it.
        </p>
        {info.link.kind === 'any' && !provider && (
          <fieldset class="panel">
            <legend>Protocol</legend>
            {(['saml', 'oidc'] as const).map((k) => (
              <label key={k} class="check">
                <input type="radio" name="kind" checked={kind === k} onChange={() => setKind(k)} /> {k === 'saml' ? 'SAML 2.0' : 'OpenID Connect'}
              </label>
            ))}
          </fieldset>
        )}
        <SpValues kind={kind} saml={info.saml} oidc={info.oidc} />
        <IdpForm secret={secret} kind={kind} provider={provider} onSaved={() => { setTest(undefined); void load(); }} />

        <section class="panel" aria-labelledby="step-test">
          <h2 id="step-test">3. Test sign-in</h2>
          <p>Sign in at your IdP with a user of {info.link.domains.join(', ')}. You come back here and see what your IdP sent, or what to change.</p>
          <button type="button" onClick={startTest} disabled={!provider || !!busy}>
            {busy === 'test' ? 'Opening your IdP…' : 'Test sign-in'}
          </button>
          {!provider && <p class="hint">Save your IdP's settings first.</p>}
          {flowError && <Notice kind="warning">{flowError}</Notice>}
          {test && <TestResultView result={test} />}
        </section>

        <section class="panel" aria-labelledby="step-activate">
          <h2 id="step-activate">4. Activate</h2>
          {info.can_activate ? (
            <p>The last test sign-in passed with the current settings.</p>
          ) : (
            <p>{provider && testIsCurrent === false && info.last_test?.ok ? 'The settings changed after the last test: test again.' : 'Activation needs a passing test sign-in with the current settings.'}</p>
          )}
          <button type="button" class="primary" onClick={activate} disabled={!info.can_activate || !!busy}>
            Activate single sign-on
          </button>
        </section>
        <ErrorNote error={actionError} />
      </main>
    </>
  );
}
