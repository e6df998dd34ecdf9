// One SSO provider: what to give the IdP admin, a test run, enable/disable, refresh, delete.
import { useState } from 'preact/hooks';
import { api, seg } from '../api';
import { href, navigate } from '../router';
import type { Certificate, Project, Provider } from '../types';
import { CopyField } from '../ui/copy-field';
import { Badge, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { ConfirmDelete } from '../ui/dialog';
import { useAction, useResource } from '../ui/use-resource';
import { ProviderEdit } from './provider-edit';

export function ProviderView({ project, id }: { project: Project; id: string }) {
  const ssoBase = `projects/${seg(project.ref)}/auth/providers`;
  const path = `${ssoBase}/sso/${seg(id)}`;
  const p = useResource<Provider>(path);
  const [flash, setFlash] = useState('');
  const [testResult, setTestResult] = useState<Parameters<typeof TestResult>[0]['result'] | null>(null);
  const [deleting, setDeleting] = useState(false);

  const patch = useAction(async (body: Record<string, unknown>, done: string) => {
    // enabling may move the users of a subdomain from another provider: the answer says so
    const r = await api<{ warnings?: { message: string }[] }>('PATCH', path, body);
    setTestResult(null);
    setFlash([done, ...(r?.warnings ?? []).map((w) => w.message)].join(' '));
    p.reload();
  });
  const test = useAction(async () => {
    setTestResult(null);
    setTestResult(await api('POST', `${ssoBase}/${seg(id)}/test`));
  });
  const remove = useAction(async () => {
    await api('DELETE', path);
    navigate(href(project.ref, 'sso'));
  });

  if (p.loading && !p.data) return <Loading what="Loading provider" />;
  if (p.error) return <Failure error={p.error} plan={project.plan} projectRef={project.ref} />;
  const v = p.data!;
  const saml = v.kind === 'saml';
  return (
    <>
      <p>
        <a href={href(project.ref, 'sso')}>← All providers</a>
      </p>
      <h2>
        {v.name} <Badge tone="muted">{v.kind.toUpperCase()}</Badge> {v.enabled ? <Badge tone="ok">enabled</Badge> : <Badge tone="muted">disabled</Badge>}
      </h2>
      {flash && <Notice kind="success">{flash}</Notice>}

      <section class="panel" aria-labelledby="idp-setup">
        <h3 id="idp-setup">Give these to your IdP administrator</h3>
        {saml ? (
          <>
            <p class="hint">Either the SP metadata URL, or the ACS URL together with the entity ID. Assertions must be signed and use the email NameID format.</p>
            {v.sp_metadata_url && <CopyField label="SP metadata URL" value={v.sp_metadata_url} />}
            {v.acs_url && <CopyField label="ACS URL" value={v.acs_url} />}
            {v.sp_entity_id && <CopyField label="SP entity ID" value={v.sp_entity_id} />}
          </>
        ) : (
          <>
            <p class="hint">Register this as a redirect URI of the client at your IdP.</p>
            {v.callback_url && <CopyField label="Callback URL" value={v.callback_url} />}
          </>
        )}
      </section>

      <dl class="facts">
        {saml ? (
          <>
            <dt>Metadata</dt>
            <dd class="mono wrap">{v.metadata_url ?? 'pasted XML'}</dd>
            <dt>IdP entity ID</dt>
            <dd class="mono wrap">{v.idp_entity_id ?? '—'}</dd>
            <dt>IdP sign-in URL</dt>
            <dd class="mono wrap">{v.idp_sso_url ?? '—'}</dd>
          </>
        ) : (
          <>
            <dt>Issuer</dt>
            <dd class="mono wrap">{v.issuer}</dd>
            <dt>Client id</dt>
            <dd class="mono">{v.client_id}</dd>
            <dt>Scopes</dt>
            <dd class="mono">{v.scopes?.join(' ')}</dd>
          </>
        )}
        <dt>Domains</dt>
        <dd class="mono">{v.domains.join(', ')}</dd>
        <dt>Updated</dt>
        <dd>{when(v.updated_at)}</dd>
      </dl>

      {saml && <Certificates certs={v.idp_signing_certificates ?? []} />}

      <div class="toolbar">
        <button type="button" onClick={() => test.run()} disabled={test.busy}>
          {test.busy ? 'Testing…' : saml ? 'Test (download and parse metadata)' : 'Test (run discovery)'}
        </button>
        <button type="button" disabled={patch.busy} onClick={() => patch.run({ enabled: !v.enabled }, v.enabled ? 'Provider disabled: its domains no longer route to it.' : 'Provider enabled.')}>
          {v.enabled ? 'Disable' : 'Enable'}
        </button>
        {saml && v.metadata_url && (
          <button type="button" disabled={patch.busy} onClick={() => patch.run({ refresh_metadata: true }, 'Metadata re-read: the signing certificates are up to date.')}>
            Refresh metadata
          </button>
        )}
        <button type="button" class="danger" onClick={() => setDeleting(true)}>
          Delete
        </button>
      </div>
      <ErrorNote error={patch.error} title="Not changed" />
      <ErrorNote error={test.error} title="Test failed" />
      {testResult !== null && <TestResult result={testResult} />}

      <ProviderEdit key={v.updated_at} provider={v} path={path} onSaved={() => (setFlash('Provider saved.'), p.reload())} />

      {deleting && (
        <ConfirmDelete title={`Delete ${v.name}?`} action={remove} onConfirm={() => remove.run()} onCancel={() => setDeleting(false)}>
          <p>Users of its domains can no longer sign in through it. Their accounts stay, but their identities from this provider are removed.</p>
        </ConfirmDelete>
      )}
    </>
  );
}

/** The IdP certificates trusted to sign assertions (several during a rotation). */
function Certificates({ certs }: { certs: Certificate[] }) {
  return (
    <table>
      <caption>Trusted signing certificates</caption>
      <thead>
        <tr>
          <th scope="col">Subject</th>
          <th scope="col">SHA-256 fingerprint</th>
          <th scope="col">Expires</th>
        </tr>
      </thead>
      <tbody>
        {certs.map((c) => (
          <tr key={c.sha256_fingerprint}>
            <td class="wrap">{c.subject}</td>
            <td class="mono wrap small">{c.sha256_fingerprint}</td>
            <td>{new Date(c.not_after) < new Date() ? <Badge tone="bad">expired {when(c.not_after)}</Badge> : when(c.not_after)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The test endpoint's answer: whether it worked, the problem if any ({code, message}), and what it found. */
function TestResult({ result }: { result: { ok: boolean; problem: { code: string; message: string } | null; matches_stored?: boolean } }) {
  const { ok, problem } = result;
  return (
    <section class={`test-result ${ok ? 'ok' : 'bad'}`} role="status" aria-labelledby="test-title">
      <h3 id="test-title">{ok ? 'Test passed' : 'Test found a problem'}</h3>
      {problem && (
        <p>
          {problem.message} <code>{problem.code}</code>
        </p>
      )}
      {result.matches_stored === false && <p>The metadata differs from what is stored: press “Refresh metadata” to trust what it says now.</p>}
      <pre class="body">{JSON.stringify(result, null, 2)}</pre>
    </section>
  );
}
