// Create an OIDC provider (discovery runs on save) or a SAML one (metadata URL or pasted XML).
import { useState } from 'preact/hooks';
import { api } from '../api';
import type { Provider } from '../types';
import { ErrorNote } from '../ui/feedback';
import { Check, Field, TextArea, splitList } from '../ui/form';
import { useAction } from '../ui/use-resource';

export function ProviderCreate({ base, onCreated, onCancel }: { base: string; onCreated: (p: Provider) => void; onCancel: () => void }) {
  const [kind, setKind] = useState<'oidc' | 'saml'>('oidc');
  const [name, setName] = useState('');
  const [domains, setDomains] = useState('');
  const [issuer, setIssuer] = useState('');
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [scopes, setScopes] = useState('openid email profile');
  const [source, setSource] = useState<'url' | 'xml'>('url');
  const [metadataUrl, setMetadataUrl] = useState('');
  const [metadataXml, setMetadataXml] = useState('');
  const [trustEmail, setTrustEmail] = useState(false);
  const [jit, setJit] = useState(true);

  const save = useAction(async () => {
    const body: Record<string, unknown> = { kind, name, domains: splitList(domains), trust_email: trustEmail, jit };
    if (kind === 'oidc') Object.assign(body, { issuer: issuer.trim(), client_id: clientId, client_secret: clientSecret, scopes: splitList(scopes) });
    else if (source === 'url') body.metadata_url = metadataUrl.trim();
    else body.metadata_xml = metadataXml;
    onCreated(await api<Provider>('POST', base, body));
  });

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void save.run();
      }}
    >
      <fieldset class="segmented">
        <legend>Protocol</legend>
        <label class="inline">
          <input type="radio" name="kind" value="oidc" checked={kind === 'oidc'} onChange={() => setKind('oidc')} /> OIDC
        </label>
        <label class="inline">
          <input type="radio" name="kind" value="saml" checked={kind === 'saml'} onChange={() => setKind('saml')} /> SAML 2.0
        </label>
      </fieldset>
      <Field label="Name" value={name} onInput={setName} required placeholder="Acme Okta" />
      <Field label="Email domains" value={domains} onInput={setDomains} required mono placeholder="acme.com, acme.co.uk" hint="Separated by commas or spaces. Subdomains match too." />
      {kind === 'oidc' ? (
        <>
          <Field label="Issuer" type="url" value={issuer} onInput={setIssuer} required mono placeholder="https://login.acme.com" hint="Discovery runs on save: the discovered issuer must equal this exactly." />
          <Field label="Client id" value={clientId} onInput={setClientId} required mono />
          <Field label="Client secret" type="password" autoComplete="new-password" value={clientSecret} onInput={setClientSecret} required hint="Write-only: encrypted and never shown again." />
          <Field label="Scopes" value={scopes} onInput={setScopes} mono />
        </>
      ) : (
        <>
          <fieldset class="segmented">
            <legend>IdP metadata</legend>
            <label class="inline">
              <input type="radio" name="source" checked={source === 'url'} onChange={() => setSource('url')} /> From a URL
            </label>
            <label class="inline">
              <input type="radio" name="source" checked={source === 'xml'} onChange={() => setSource('xml')} /> Paste XML
            </label>
          </fieldset>
          {source === 'url' ? (
            <Field label="Metadata URL" type="url" value={metadataUrl} onInput={setMetadataUrl} required mono hint="It can be re-read later to pick up a new signing certificate." />
          ) : (
            <TextArea label="Metadata XML" value={metadataXml} onInput={setMetadataXml} required mono rows={8} hint="It must contain the IdP's signing certificate." />
          )}
        </>
      )}
      <Check label="Trust the IdP's email as verified" checked={trustEmail} onChange={setTrustEmail} hint="Lets a sign-in link to an existing user with the same verified email (when the project allows linking)." />
      <Check label="Create users on first sign-in (just in time)" checked={jit} onChange={setJit} />
      <ErrorNote error={save.error} title="Not saved" />
      <div class="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="primary" disabled={save.busy}>
          {save.busy ? (kind === 'oidc' ? 'Running discovery…' : 'Reading metadata…') : 'Add provider'}
        </button>
      </div>
    </form>
  );
}
