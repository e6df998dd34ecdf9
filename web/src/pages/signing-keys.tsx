// The project's access-token signing keys: the one that signs now, the rotated-out ones that still
// verify the tokens they signed (and until when), and rotation behind a confirmation.
import { useState } from 'preact/hooks';
import { api, seg } from '../api';
import type { Project, SigningKeys as Keys } from '../types';
import { CopyField } from '../ui/copy-field';
import { Badge, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { Confirm } from '../ui/dialog';
import { useAction, useResource } from '../ui/use-resource';

export function SigningKeys({ project }: { project: Project }) {
  const path = `projects/${seg(project.ref)}/auth/signing-keys`;
  const list = useResource<Keys>(path);
  // The rotation answers the keys as they are after it: shown instead of reading them again.
  const [rotated, setRotated] = useState<{ keys: Keys; from: string } | null>(null);
  const [asking, setAsking] = useState(false);
  const keys = (rotated?.keys ?? list.data)?.keys;
  const current = keys?.find((k) => k.status === 'current');

  const rotate = useAction(async (from: string) => {
    const after = await api<Keys>('POST', `${path}/rotate`);
    setAsking(false);
    setRotated({ keys: after, from });
  });
  const retired = rotated && rotated.keys.keys.find((k) => k.kid === rotated.from && k.status === 'previous');

  return (
    <section class="panel" aria-labelledby="signing-keys-title">
      <h2 id="signing-keys-title">Access-token signing keys</h2>
      <p class="hint">
        Access tokens are signed (ES256) with the project's current key; its private half never leaves the service. Verifiers find the public keys by{' '}
        <code>kid</code> in the JWKS, read with the anon key in the <code>apikey</code> header.
      </p>
      <CopyField label="JWKS URL" value={`${project.project_url}/auth/v1/.well-known/jwks.json`} />
      {list.loading && !keys && <Loading what="Loading signing keys" />}
      {list.error && !keys && <Failure error={list.error} plan={project.plan} projectRef={project.ref} />}
      {retired && (
        <Notice kind="success">
          Key <code>{current?.kid}</code> signs new access tokens from now on. Key <code>{retired.kid}</code> keeps verifying the tokens it signed until{' '}
          {when(retired.valid_until)}; nobody was signed out.
        </Notice>
      )}
      {!!keys?.length && (
        <table>
          <caption class="sr-only">Access-token signing keys</caption>
          <thead>
            <tr>
              <th scope="col">Key ID (kid)</th>
              <th scope="col">Status</th>
              <th scope="col">Retired</th>
              <th scope="col">Verifies tokens until</th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => (
              <tr key={k.kid}>
                <td class="mono wrap">{k.kid}</td>
                <td>
                  {k.status === 'current' ? <Badge tone="ok">current</Badge> : <Badge tone="muted">previous</Badge>}{' '}
                  <span class="dim small">{k.status === 'current' ? 'signs new tokens' : 'verifies only'}</span>
                </td>
                <td>{when(k.retired_at)}</td>
                <td>{k.status === 'current' ? 'while it is current' : when(k.valid_until)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {current && (
        <div class="toolbar">
          <button type="button" onClick={() => setAsking(true)}>
            Rotate signing key
          </button>
        </div>
      )}
      {asking && current && (
        <Confirm title="Rotate the signing key?" confirmLabel="Rotate" busy={rotate.busy} onConfirm={() => rotate.run(current.kid)} onCancel={() => setAsking(false)}>
          <p>A new key signs every access token from now on.</p>
          <p>
            <strong>Signed-in users stay signed in.</strong> The current key (<code>{current.kid}</code>) keeps verifying the tokens it already signed
            until the last of them expires (the access-token lifetime plus a minute); this page shows that time once the key is rotated. Each user's
            next refresh returns a token signed by the new key.
          </p>
          <p class="hint">Verifiers that cache the JWKS should look keys up by kid and refetch on an unknown one (supabase-js and jose do).</p>
          <ErrorNote error={rotate.error} />
        </Confirm>
      )}
    </section>
  );
}
