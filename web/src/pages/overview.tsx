// What a client needs to talk to the project (URL, anon key), what its plan includes, how its
// changes are captured into the outbox, its sign-in settings and its access-token signing keys.
import type { SectionProps } from './section';
import { CopyField } from '../ui/copy-field';
import { Badge, when } from '../ui/feedback';
import { AuthSettings } from './auth-settings';
import { SigningKeys } from './signing-keys';
import { CapturePanel } from './capture';

export function Overview({ project: p, onChanged }: SectionProps & { onChanged: () => void }) {
  return (
    <>
      <dl class="facts">
        <dt>Plan</dt>
        <dd>
          {p.plan}{' '}
          {['sso', 'custom_smtp'].map((f) => (
            <Badge key={f} tone={p.features.includes(f) ? 'ok' : 'muted'}>
              {f === 'sso' ? 'SSO' : 'custom SMTP'} {p.features.includes(f) ? 'included' : 'not included'}
            </Badge>
          ))}
        </dd>
        <dt>Outbox</dt>
        <dd>{p.outbox_enabled ? 'enabled (see Capture below)' : 'not enabled yet (creating a webhook or configuring SMTP enables it)'}</dd>
        <dt>Created</dt>
        <dd>{when(p.created_at)}</dd>
      </dl>
      <CapturePanel project={p} />
      <h2>Client settings</h2>
      <p class="hint">
        Give these to a client SDK: its auth endpoints live under <code>project URL + /auth/v1</code>.
      </p>
      <CopyField label="Project URL" value={p.project_url} />
      <CopyField label="Anon key" value={p.anon_key} />
      <AuthSettings project={p} onChanged={onChanged} />
      <SigningKeys project={p} />
    </>
  );
}
