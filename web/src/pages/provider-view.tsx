// One SSO provider: what to give the IdP admin, a test run, enable/disable, refresh, delete.
import { useState } from 'preact/hooks';
import { api, seg } from '../api';
import { href, navigate } from '../router';
import type { Project, Provider } from '../types';
import { CopyField } from '../ui/copy-field';
import { Badge, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { Confirm } from '../ui/dialog';
import { useAction, useResource } from '../ui/use-resource';
import { ProviderEdit } from './provider-edit';

export function ProviderView({ project, id }: { project: Project; id: string }) {
  const ssoBase = `projects/${seg(project.ref)}/auth/providers`;
  const path = `${ssoBase}/sso/${seg(id)}`;
  const p = useResource<Provider>(path);
  const [flash, setFlash] = useState('');
  const [testResult, setTestResult] = useState<unknown>(null);
  const [deleting, setDeleting] = useState(false);

  const patch = useAction(async (body: Record<string, unknown>, done: string) => {
    await api('PATCH', path, body);
    setFlash(done);
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
  if (p.error) return <Failure error={p.error} plan={project.plan} />;
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
        <Confirm title={`Delete ${v.name}?`} confirmLabel="Delete" danger busy={remove.busy} onConfirm={() => remove.run()} onCancel={() => setDeleting(false)}>
          <p>Users of its domains can no longer sign in through it. Their accounts stay, but their identities from this provider are removed.</p>
          <ErrorNote error={remove.error} />
        </Confirm>
      )}
    </>
  );
}

/** The test endpoint's answer: whether it worked, the problem if any, and what it found. */
function TestResult({ result }: { result: unknown }) {
  const r = (result ?? {}) as { ok?: boolean; problem?: string | null; error?: { message?: string } | string | null };
  const problem = r.problem ?? (typeof r.error === 'string' ? r.error : r.error?.message);
  const ok = r.ok ?? !problem;
  return (
    <section class={`test-result ${ok ? 'ok' : 'bad'}`} role="status" aria-labelledby="test-title">
      <h3 id="test-title">{ok ? 'Test passed' : 'Test found a problem'}</h3>
      {problem && <p>{problem}</p>}
      <pre class="body">{JSON.stringify(result, null, 2)}</pre>
    </section>
  );
}
