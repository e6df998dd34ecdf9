// The project's sign-in settings: where users return to, and whether sign-ups and linking are allowed.
import { useState } from 'preact/hooks';
import { api, seg } from '../api';
import type { Project } from '../types';
import { ErrorNote, Notice } from '../ui/feedback';
import { Check, Field, TextArea, splitList } from '../ui/form';
import { useAction } from '../ui/use-resource';

export function AuthSettings({ project: p, onChanged }: { project: Project; onChanged: () => void }) {
  const [siteUrl, setSiteUrl] = useState(p.auth.site_url);
  const [redirects, setRedirects] = useState(p.auth.additional_redirect_urls.join('\n'));
  const [signups, setSignups] = useState(!p.auth.disable_signup);
  const [linking, setLinking] = useState(p.auth.allow_linking);
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    await api('PATCH', `projects/${seg(p.ref)}`, {
      site_url: siteUrl.trim(),
      additional_redirect_urls: splitList(redirects),
      disable_signup: !signups,
      allow_linking: linking,
    });
    setSaved(true);
    onChanged();
  });
  return (
    <form
      class="panel"
      onSubmit={(e) => {
        e.preventDefault();
        setSaved(false);
        void save.run();
      }}
    >
      <h2>Sign-in settings</h2>
      <Field label="Site URL" type="url" value={siteUrl} onInput={setSiteUrl} required mono hint="Where users return after SSO when redirectTo is missing or not allowed." />
      <TextArea label="Allowed redirect URLs" value={redirects} onInput={setRedirects} mono rows={3} hint="One per line. redirectTo must match one of them (or the site URL): no open redirects." />
      <Check label="Allow sign-ups (just-in-time users)" checked={signups} onChange={setSignups} />
      <Check label="Allow linking an SSO identity to an existing user with the same verified email" checked={linking} onChange={setLinking} />
      {saved && <Notice kind="success">Sign-in settings saved.</Notice>}
      <ErrorNote error={save.error} title="Not saved" />
      <button type="submit" class="primary" disabled={save.busy}>
        {save.busy ? 'Saving…' : 'Save sign-in settings'}
      </button>
    </form>
  );
}
