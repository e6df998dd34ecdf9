// The project's users (those SSO signs in): create, ban and unban, delete.
import { useState } from 'preact/hooks';
import { api, seg } from '../api';
import type { SectionProps } from './project';
import type { User } from '../types';
import { Badge, Empty, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { Confirm } from '../ui/dialog';
import { Check, Field } from '../ui/form';
import { useAction, useResource } from '../ui/use-resource';

export function Users({ project }: SectionProps) {
  const base = `projects/${seg(project.ref)}/auth/users`;
  const list = useResource<User[]>(base);
  const [email, setEmail] = useState('');
  const [verified, setVerified] = useState(true);
  const [flash, setFlash] = useState('');
  const [deleting, setDeleting] = useState<User | null>(null);

  const create = useAction(async () => {
    await api('POST', base, { email, email_verified: verified });
    setFlash(`User ${email} created.`);
    setEmail('');
    list.reload();
  });
  const ban = useAction(async (u: User, banned: boolean) => {
    await api('PATCH', `${base}/${seg(u.id)}`, { banned });
    setFlash(`${u.email ?? u.id} ${banned ? 'banned' : 'unbanned'}.`);
    list.reload();
  });
  const remove = useAction(async (u: User) => {
    await api('DELETE', `${base}/${seg(u.id)}`);
    setDeleting(null);
    setFlash(`${u.email ?? u.id} deleted.`);
    list.reload();
  });
  const banned = (u: User) => !!u.banned_until && new Date(u.banned_until) > new Date();

  return (
    <>
      <p class="lead">Users are created just in time by SSO sign-ins, or here (for example to test the linking rules).</p>
      {flash && <Notice kind="success">{flash}</Notice>}
      <ErrorNote error={ban.error} title="Not changed" />
      {list.loading && !list.data && <Loading what="Loading users" />}
      {list.error && <Failure error={list.error} plan={project.plan} />}
      {list.data?.length === 0 && <Empty>No users yet.</Empty>}
      {!!list.data?.length && (
        <table>
          <caption class="sr-only">Users</caption>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">State</th>
              <th scope="col">Last sign-in</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((u) => (
              <tr key={u.id}>
                <td class="mono">{u.email ?? '—'}</td>
                <td>
                  {banned(u) ? <Badge tone="bad">banned</Badge> : <Badge tone="ok">active</Badge>}{' '}
                  {u.email_confirmed_at ? <Badge tone="muted">verified</Badge> : <Badge tone="warn">unverified</Badge>}
                </td>
                <td>{when(u.last_sign_in_at)}</td>
                <td>{when(u.created_at)}</td>
                <td class="row-actions">
                  <button type="button" disabled={ban.busy} onClick={() => ban.run(u, !banned(u))}>
                    {banned(u) ? 'Unban' : 'Ban'}
                  </button>
                  <button type="button" class="danger" onClick={() => setDeleting(u)} aria-label={`Delete ${u.email ?? u.id}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        class="panel"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <h2>Create a user</h2>
        <Field label="Email" type="email" value={email} onInput={setEmail} required />
        <Check label="Email is verified" checked={verified} onChange={setVerified} />
        <ErrorNote error={create.error} title="Not created" />
        <button type="submit" class="primary" disabled={create.busy}>
          Create user
        </button>
      </form>
      {deleting && (
        <Confirm title={`Delete ${deleting.email ?? 'this user'}?`} confirmLabel="Delete" danger busy={remove.busy} onConfirm={() => remove.run(deleting)} onCancel={() => setDeleting(null)}>
          <p>The user, their identities and sessions are removed.</p>
          <ErrorNote error={remove.error} />
        </Confirm>
      )}
    </>
  );
}
