// Edit a provider's domains, attribute mapping and sign-in rules (PATCH sends what changed).
import { useState } from 'preact/hooks';
import { api, ApiFailure } from '../api';
import type { AttributeMapping, Provider } from '../types';
import { ErrorNote } from '../ui/feedback';
import { Check, Field, TextArea, splitList } from '../ui/form';
import { useAction } from '../ui/use-resource';

const KEYS = ['email', 'email_verified', 'name', 'first_name', 'last_name', 'image'] as const;
const defaults = {
  oidc: { email: 'email', email_verified: 'email_verified', name: 'name', first_name: '', last_name: '', image: 'picture' },
  saml: { email: 'email (else the NameID)', email_verified: '', name: 'givenName + surname, or displayName', first_name: 'givenName', last_name: 'surname', image: '' },
};

export function ProviderEdit({ provider: v, path, onSaved }: { provider: Provider; path: string; onSaved: () => void }) {
  const [domains, setDomains] = useState(v.domains.join(', '));
  const [mapping, setMapping] = useState<Record<string, string>>(() => Object.fromEntries(KEYS.map((k) => [k, (v.attribute_mapping[k] as string) ?? ''])));
  const [extra, setExtra] = useState(
    Object.entries(v.attribute_mapping.extra ?? {})
      .map(([k, c]) => `${k} = ${c}`)
      .join('\n'),
  );
  const [trustEmail, setTrustEmail] = useState(v.trust_email);
  const [jit, setJit] = useState(v.jit);
  const [newMetadataUrl, setNewMetadataUrl] = useState('');
  const [newMetadataXml, setNewMetadataXml] = useState('');

  const save = useAction(async () => {
    const extraObj: Record<string, string> = {};
    for (const line of extra.split('\n').filter((l) => l.trim())) {
      const m = /^\s*([^=\s]+)\s*=\s*(\S.*?)\s*$/.exec(line);
      if (!m) throw new ApiFailure(0, 'invalid_mapping', `Extra line "${line.trim()}" needs the form "key = claim".`);
      extraObj[m[1]] = m[2];
    }
    const attribute_mapping: AttributeMapping = Object.fromEntries(KEYS.filter((k) => mapping[k].trim()).map((k) => [k, mapping[k].trim()]));
    if (Object.keys(extraObj).length) attribute_mapping.extra = extraObj;
    const body: Record<string, unknown> = {};
    const newDomains = splitList(domains);
    if (newDomains.join(',') !== v.domains.join(',')) body.domains = newDomains;
    if (JSON.stringify(attribute_mapping) !== JSON.stringify(v.attribute_mapping ?? {})) body.attribute_mapping = attribute_mapping;
    if (trustEmail !== v.trust_email) body.trust_email = trustEmail;
    if (jit !== v.jit) body.jit = jit;
    if (newMetadataUrl.trim()) body.metadata_url = newMetadataUrl.trim();
    if (newMetadataXml.trim()) body.metadata_xml = newMetadataXml;
    if (Object.keys(body).length === 0) return;
    await api('PATCH', path, body);
    onSaved();
  });

  return (
    <form
      class="panel"
      onSubmit={(e) => {
        e.preventDefault();
        void save.run();
      }}
    >
      <h3>Domains and attributes</h3>
      <Field label="Email domains" value={domains} onInput={setDomains} required mono hint="Unique across this project's providers." />
      <fieldset>
        <legend>Attribute mapping</legend>
        <p class="hint">Which claim ({v.kind === 'saml' ? 'attribute' : 'ID token claim'}) fills each user field. Empty uses the default shown.</p>
        <div class="grid2">
          {KEYS.map((k) => (
            <Field
              key={k}
              label={k}
              value={mapping[k]}
              onInput={(x) => setMapping({ ...mapping, [k]: x })}
              mono
              placeholder={defaults[v.kind][k] || 'not mapped'}
            />
          ))}
        </div>
        <TextArea label="Extra (copied into user_metadata)" value={extra} onInput={setExtra} mono rows={3} placeholder={'department = dept\nemployee_id = employeeNumber'} hint="One “key = claim” per line." />
      </fieldset>
      <Check label="Trust the IdP's email as verified" checked={trustEmail} onChange={setTrustEmail} />
      <Check label="Create users on first sign-in (just in time)" checked={jit} onChange={setJit} />
      {v.kind === 'saml' && (
        <fieldset>
          <legend>Replace the IdP metadata</legend>
          <p class="hint">Only when the IdP moved. For a new signing certificate at the same URL, “Refresh metadata” above is enough.</p>
          <Field label="New metadata URL" type="url" value={newMetadataUrl} onInput={setNewMetadataUrl} mono />
          <TextArea label="Or new metadata XML" value={newMetadataXml} onInput={setNewMetadataXml} mono rows={4} />
        </fieldset>
      )}
      <ErrorNote error={save.error} title="Not saved" />
      <button type="submit" class="primary" disabled={save.busy}>
        {save.busy ? 'Saving…' : 'Save provider'}
      </button>
    </form>
  );
}
