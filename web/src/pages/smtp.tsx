// The project's own SMTP server for mail from SQL (base.send_email). The password is write-only.
import { useEffect, useState } from 'preact/hooks';
import { api, seg } from '../api';
import type { SectionProps } from './section';
import type { Smtp } from '../types';
import { ErrorNote, Failure, Loading, Notice, PlanLimit, when } from '../ui/feedback';
import { ConfirmDelete } from '../ui/dialog';
import { Field, Select } from '../ui/form';
import { useAction, useResource } from '../ui/use-resource';

export function SmtpSettings({ project }: SectionProps) {
  if (!project.features.includes('custom_smtp')) return <PlanLimit feature="custom_smtp" plan={project.plan} projectRef={project.ref} />;
  return <SmtpForm refName={project.ref} plan={project.plan} />;
}

function SmtpForm({ refName, plan }: { refName: string; plan: string }) {
  const path = `projects/${seg(refName)}/smtp`;
  const current = useResource<Smtp>(path);
  const notConfigured = current.error?.code === 'smtp_not_configured';
  const [host, setHost] = useState('');
  const [port, setPort] = useState('587');
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const [senderEmail, setSenderEmail] = useState('');
  const [senderName, setSenderName] = useState('');
  const [tls, setTls] = useState<Smtp['tls_mode']>('starttls');
  const [flash, setFlash] = useState('');
  const [confirmDelete, setConfirmDelete] = useState(false);

  useEffect(() => {
    const s = current.data;
    if (!s) return;
    setHost(s.host);
    setPort(String(s.port));
    setUser(s.user ?? '');
    setSenderEmail(s.sender_email);
    setSenderName(s.sender_name ?? '');
    setTls(s.tls_mode);
  }, [current.data]);

  const save = useAction(async () => {
    const body: Record<string, unknown> = { host, port: Number(port), sender_email: senderEmail, tls_mode: tls };
    // Empty user or sender name clears them; an empty password field keeps the stored password.
    body.user = user.trim() || null;
    body.sender_name = senderName.trim() || null;
    if (password) body.password = password;
    await api('PUT', path, body);
    setPassword('');
    setFlash('SMTP settings saved. Mail from this project now goes through this server.');
    current.reload();
  });
  const remove = useAction(async () => {
    await api('DELETE', path);
    setConfirmDelete(false);
    setFlash('SMTP settings removed: mail uses the platform default again.');
    current.reload();
  });

  if (current.loading && !current.data && !current.error) return <Loading what="Loading SMTP settings" />;
  if (current.error && !notConfigured) return <Failure error={current.error} plan={plan} projectRef={refName} />;
  return (
    <>
      <p class="lead">
        Mail queued with <code>base.send_email</code> is sent through this server. Without settings, the platform default is used.
      </p>
      {flash && <Notice kind="success">{flash}</Notice>}
      {notConfigured && !flash && <Notice>No SMTP server configured yet: mail uses the platform default.</Notice>}
      {current.data && (
        <p class="dim">
          Last changed {when(current.data.updated_at)}. {current.data.password_set ? 'A password is stored.' : 'No password is stored.'}
        </p>
      )}
      <form
        class="panel"
        onSubmit={(e) => {
          e.preventDefault();
          void save.run();
        }}
      >
        <div class="grid2">
          <Field label="Host" value={host} onInput={setHost} required mono placeholder="smtp.example.com" />
          <Field label="Port" type="number" value={port} onInput={setPort} required min={1} max={65535} />
          <Field label="User" value={user} onInput={setUser} mono />
          <Field
            label="Password"
            type="password"
            autoComplete="new-password"
            value={password}
            onInput={setPassword}
            hint={current.data ? 'Write-only. Leave empty to keep the stored password.' : 'Write-only: stored encrypted, never shown again.'}
          />
          <Field label="Sender address" type="email" value={senderEmail} onInput={setSenderEmail} required placeholder="no-reply@example.com" />
          <Field label="Sender name" value={senderName} onInput={setSenderName} />
        </div>
        <Select
          label="TLS"
          value={tls}
          onChange={setTls}
          options={[
            ['starttls', 'STARTTLS (usually port 587)'],
            ['implicit', 'Implicit TLS (usually port 465)'],
            ['none', 'None (only for a local relay)'],
          ]}
        />
        <ErrorNote error={save.error} title="Not saved" />
        <div class="actions">
          {current.data && (
            <button type="button" class="danger" onClick={() => setConfirmDelete(true)}>
              Remove settings
            </button>
          )}
          <button type="submit" class="primary" disabled={save.busy}>
            {save.busy ? 'Saving…' : 'Save SMTP settings'}
          </button>
        </div>
      </form>
      {confirmDelete && (
        <ConfirmDelete title="Remove the SMTP settings?" confirmLabel="Remove" action={remove} onConfirm={() => remove.run()} onCancel={() => setConfirmDelete(false)}>
          <p>Mail from this project will use the platform default server.</p>
        </ConfirmDelete>
      )}
    </>
  );
}
