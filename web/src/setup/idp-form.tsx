// Step 2 of the setup page: the IdP's side (SAML metadata URL or XML; OIDC issuer, client id and
// secret) and the attribute mapping. Saved as the link's draft provider through the same
// validation as the Management API; the client secret is write-only (never shown again).
import { useState } from 'preact/hooks';
import type { ApiFailure } from '../api';
import { ErrorNote, Notice } from '../ui/feedback';
import { Field, TextArea } from '../ui/form';
import { setupApi } from './link';
import type { Draft, Mapping } from './types';

export function IdpForm({ secret, kind, provider, onSaved }: { secret: string; kind: 'saml' | 'oidc'; provider: Draft | null; onSaved: () => void }) {
  const same = provider?.kind === kind ? provider : null;
  const [name, setName] = useState(same?.name ?? '');
  const [metadataUrl, setMetadataUrl] = useState(same?.metadata_url ?? '');
  const [metadataXml, setMetadataXml] = useState(same?.metadata_xml ?? '');
  const [issuer, setIssuer] = useState(same?.issuer ?? '');
  const [clientId, setClientId] = useState(same?.client_id ?? '');
  const [clientSecret, setClientSecret] = useState('');
  const m = same?.attribute_mapping ?? {};
  const [email, setEmail] = useState(m.email ?? '');
  const [firstName, setFirstName] = useState(m.first_name ?? '');
  const [lastName, setLastName] = useState(m.last_name ?? '');
  const [extra, setExtra] = useState(Object.entries(m.extra ?? {}).map(([k, v]) => `${k}=${v}`).join(', '));
  const [error, setError] = useState<ApiFailure>();
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setSaved(false);
    const mapping: Mapping = {};
    if (email.trim()) mapping.email = email.trim();
    if (firstName.trim()) mapping.first_name = firstName.trim();
    if (lastName.trim()) mapping.last_name = lastName.trim();
    const pairs = extra.split(/[,\n]/).map((s) => s.trim()).filter(Boolean);
    if (pairs.length) mapping.extra = Object.fromEntries(pairs.map((p) => [p.split('=')[0].trim(), (p.split('=')[1] ?? p).trim()]));
    const body: Record<string, unknown> = { kind, attribute_mapping: mapping };
    if (name.trim()) body.name = name.trim();
    if (kind === 'saml') {
      if (metadataXml.trim() && metadataXml !== same?.metadata_xml) body.metadata_xml = metadataXml;
      else if (metadataUrl.trim()) body.metadata_url = metadataUrl.trim();
    } else {
      if (issuer.trim()) body.issuer = issuer.trim();
      if (clientId.trim()) body.client_id = clientId.trim();
      if (clientSecret) body.client_secret = clientSecret;
    }
    try {
      await setupApi(secret, 'PUT', '/provider', body);
      setClientSecret('');
      setSaved(true);
      onSaved();
    } catch (err) {
      setError(err as ApiFailure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="panel" aria-labelledby="step-idp">
      <h2 id="step-idp">2. Enter your IdP's side</h2>
      <form onSubmit={save}>
        <Field label="Name" value={name} onInput={setName} placeholder="e.g. Acme Okta" hint="How the owner of the service sees this connection." />
        {kind === 'saml' ? (
          <>
            <Field label="IdP metadata URL" value={metadataUrl} onInput={setMetadataUrl} type="url" mono hint="Preferred: certificate rotations can then be picked up from it." />
            <TextArea label="IdP metadata XML" value={metadataXml} onInput={setMetadataXml} mono rows={5} hint="Or paste the metadata document when your IdP has no URL for it." />
          </>
        ) : (
          <>
            <Field label="Issuer" value={issuer} onInput={setIssuer} type="url" mono hint="Exactly as your IdP's /.well-known/openid-configuration states it." />
            <Field label="Client ID" value={clientId} onInput={setClientId} mono />
            <Field
              label="Client secret"
              value={clientSecret}
              onInput={setClientSecret}
              type="password"
              hint={same?.has_client_secret ? 'A secret is stored and is never shown again; leave this empty to keep it.' : 'Stored encrypted and never shown again.'}
            />
          </>
        )}
        <fieldset>
          <legend>Attribute mapping (leave empty for the defaults above)</legend>
          <Field label="Email attribute" value={email} onInput={setEmail} mono />
          <Field label="First name attribute" value={firstName} onInput={setFirstName} mono />
          <Field label="Last name attribute" value={lastName} onInput={setLastName} mono />
          <Field label="Extra attributes" value={extra} onInput={setExtra} mono hint="key=attribute pairs, comma separated (e.g. department=department); copied into a new user's metadata." />
        </fieldset>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Checking with your IdP…' : 'Save IdP settings'}
        </button>
      </form>
      {saved && <Notice kind="success">Saved. Run a test sign-in next.</Notice>}
      <ErrorNote error={error} />
      {same && <SavedIdp provider={same} />}
    </section>
  );
}

function SavedIdp({ provider }: { provider: Draft }) {
  return (
    <dl class="saved-idp">
      {provider.kind === 'saml' ? (
        <>
          <dt>IdP entity ID</dt>
          <dd class="mono wrap">{provider.idp_entity_id}</dd>
          <dt>IdP sign-in URL</dt>
          <dd class="mono wrap">{provider.idp_sso_url}</dd>
          <dt>Trusted signing certificates</dt>
          <dd>{(provider.idp_signing_certificates ?? []).map((c) => <div key={c.sha256_fingerprint} class="mono small wrap">{c.subject} · {c.sha256_fingerprint}</div>)}</dd>
        </>
      ) : (
        <>
          <dt>Issuer</dt>
          <dd class="mono wrap">{provider.issuer}</dd>
          <dt>Client secret</dt>
          <dd>{provider.has_client_secret ? 'stored (write-only)' : 'none'}</dd>
        </>
      )}
    </dl>
  );
}
