// SSO setup links on the owner's SSO page: make a link for a customer's IT admin (its URL is shown
// once, like a signing secret), see which links are active, expired, revoked or used, revoke one.
import { useState } from 'preact/hooks';
import { api, seg, type ApiFailure } from '../api';
import { CopyField } from '../ui/copy-field';
import { Badge, ErrorNote, Loading, when } from '../ui/feedback';
import { Field, Select, splitList } from '../ui/form';
import { useResource } from '../ui/use-resource';
import type { MadeSetupLink, ProjectSummary, SetupLink } from '../types';

const TONE = { active: 'ok', used: 'muted', expired: 'warn', revoked: 'bad' } as const;

export function SetupLinks({ project }: { project: ProjectSummary }) {
  const base = `projects/${seg(project.ref)}/auth/sso/setup-links`;
  const list = useResource<{ items: SetupLink[] }>(base);
  const [domains, setDomains] = useState('');
  const [kind, setKind] = useState<'any' | 'saml' | 'oidc'>('any');
  const [days, setDays] = useState('7');
  const [made, setMade] = useState<MadeSetupLink>();
  const [error, setError] = useState<ApiFailure>();

  const create = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      setMade(await api<MadeSetupLink>('POST', base, { domains: splitList(domains), kind, expires_in_days: Number(days) }));
      setDomains('');
      list.reload();
    } catch (err) {
      setError(err as ApiFailure);
    }
  };
  const revoke = async (l: SetupLink) => {
    if (!confirm(`Revoke the setup link for ${l.domains.join(', ')}? A provider it set up but did not activate is deleted.`)) return;
    try {
      await api('DELETE', `${base}/${seg(l.id)}`);
      list.reload();
    } catch (err) {
      setError(err as ApiFailure);
    }
  };

  return (
    <section class="panel" aria-labelledby="setup-links">
      <h2 id="setup-links">Setup links</h2>
      <p class="lead">Let your customer's IT admin set up, test and activate their IdP themselves, without your owner token. The link works for the domains you name, once.</p>
      <form onSubmit={create}>
        <Field label="Domains for the link" value={domains} onInput={setDomains} placeholder="acme.com, acme.co.uk" required />
        <Select label="Protocol" value={kind} onChange={setKind} options={[['any', 'SAML or OIDC (the admin chooses)'], ['saml', 'SAML 2.0'], ['oidc', 'OpenID Connect']]} />
        <Field label="Valid for (days)" type="number" min={1} max={30} value={days} onInput={setDays} />
        <button type="submit">Create setup link</button>
      </form>
      <ErrorNote error={error} />
      {made?.url && (
        <div class="one-time" role="status">
          <h3>Setup link for {made.domains.join(', ')}</h3>
          <p>Send it to the IT admin now: it is shown only once, and works until {when(made.expires_at)}.</p>
          {!!made.warnings?.length && (
            <ul class="notice warning" aria-label="Warnings">
              {made.warnings.map((w) => (
                <li key={w.domain}>{w.message}</li>
              ))}
            </ul>
          )}
          <CopyField label="Setup link" value={made.url} secret />
          <button type="button" onClick={() => setMade(undefined)}>
            I have sent it
          </button>
        </div>
      )}
      {list.loading && !list.data && <Loading what="Loading setup links" />}
      {!!list.data?.items.length && (
        <table>
          <caption class="sr-only">Setup links</caption>
          <thead>
            <tr>
              <th scope="col">Domains</th>
              <th scope="col">Protocol</th>
              <th scope="col">State</th>
              <th scope="col">Expires</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((l) => (
              <tr key={l.id}>
                <td class="mono wrap">{l.domains.join(', ')}</td>
                <td>{l.kind === 'any' ? 'SAML or OIDC' : l.kind.toUpperCase()}</td>
                <td>
                  <Badge tone={TONE[l.state]}>{l.state}</Badge>
                </td>
                <td>{when(l.expires_at)}</td>
                <td class="row-actions">
                  {l.state === 'active' && (
                    <button type="button" onClick={() => revoke(l)} aria-label={`Revoke the setup link for ${l.domains.join(', ')}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
