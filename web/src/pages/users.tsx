// The project's users (those SSO signs in): create, ban and unban, delete.
import { useState } from 'preact/hooks';
import { api, seg } from '../api';
import type { SectionProps } from './section';
import type { User, UserPage } from '../types';
import { Badge, Empty, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { Confirm, ConfirmDelete } from '../ui/dialog';
import { Check, Field, Select } from '../ui/form';
import { useAction, useResource } from '../ui/use-resource';

const PER_PAGE = 50;

export function Users({ project }: SectionProps) {
  const base = `projects/${seg(project.ref)}/auth/users`;
  const [page, setPage] = useState(1);
  const list = useResource<UserPage>(`${base}?page=${page}&per_page=${PER_PAGE}`);
  const users = list.data?.users;
  const pages = list.data ? Math.max(1, Math.ceil(list.data.total / PER_PAGE)) : 1;
  const [banning, setBanning] = useState<User | null>(null);
  const [banFor, setBanFor] = useState('24h');
  const [email, setEmail] = useState('');
  const [verified, setVerified] = useState(true);
  const [flash, setFlash] = useState('');
  const [deleting, setDeleting] = useState<User | null>(null);

  const create = useAction(async () => {
    await api('POST', base, { email, email_confirm: verified });
    setFlash(`User ${email} created.`);
    setEmail('');
    list.reload();
  });
  const change = useAction(async (u: User, body: { ban_duration?: string; email_confirm?: boolean }, done: string) => {
    await api('PATCH', `${base}/${seg(u.id)}`, body);
    setBanning(null);
    setFlash(`${u.email || u.id}: ${done}.`);
    list.reload();
  });
  const remove = useAction(async (u: User) => {
    await api('DELETE', `${base}/${seg(u.id)}`);
    setDeleting(null);
    setFlash(`${u.email || u.id} deleted.`);
    list.reload();
  });
  const banned = (u: User) => !!u.banned_until && new Date(u.banned_until) > new Date();

  return (
    <>
      <p class="lead">Users are created just in time by SSO sign-ins, or here (for example to test the linking rules).</p>
      {flash && <Notice kind="success">{flash}</Notice>}
      <ErrorNote error={change.error} title="Not changed" />
      {list.loading && !list.data && <Loading what="Loading users" />}
      {list.error && <Failure error={list.error} plan={project.plan} projectRef={project.ref} />}
      {users?.length === 0 && <Empty>No users yet.</Empty>}
      {!!users?.length && (
        <table>
          <caption class="sr-only">Users</caption>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">State</th>
              <th scope="col">Identities</th>
              <th scope="col">Last sign-in</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => (
              <tr key={u.id}>
                <td class="mono">{u.email || '—'}</td>
                <td>
                  {banned(u) ? <Badge tone="bad">banned</Badge> : <Badge tone="ok">active</Badge>}{' '}
                  {u.email_confirmed_at ? <Badge tone="muted">verified</Badge> : <Badge tone="warn">unverified</Badge>}
                </td>
                <td>{u.identities?.length ? u.identities.map((i) => i.provider_type.toUpperCase()).join(', ') : '—'}</td>
                <td>{when(u.last_sign_in_at)}</td>
                <td>{when(u.created_at)}</td>
                <td class="row-actions">
                  {!u.email_confirmed_at && (
                    <button type="button" disabled={change.busy} onClick={() => change.run(u, { email_confirm: true }, 'email marked verified')}>
                      Verify email
                    </button>
                  )}
                  {banned(u) ? (
                    <button type="button" disabled={change.busy} onClick={() => change.run(u, { ban_duration: 'none' }, 'unbanned')}>
                      Unban
                    </button>
                  ) : (
                    <button type="button" onClick={() => setBanning(u)}>
                      Ban…
                    </button>
                  )}
                  <button type="button" class="danger" onClick={() => setDeleting(u)} aria-label={`Delete ${u.email || u.id}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pages > 1 && (
        <nav class="toolbar" aria-label="Pages of users">
          <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            Previous
          </button>
          <span>
            Page {page} of {pages} ({list.data!.total} users)
          </span>
          <button type="button" disabled={page >= pages} onClick={() => setPage(page + 1)}>
            Next
          </button>
        </nav>
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
      {banning && (
        <Confirm
          title={`Ban ${banning.email || 'this user'}?`}
          confirmLabel="Ban"
          danger
          busy={change.busy}
          onConfirm={() => change.run(banning, { ban_duration: banFor }, `banned for ${banFor}`)}
          onCancel={() => setBanning(null)}
        >
          <p>Their sessions end at once and sign-in is refused with user_banned until the ban ends.</p>
          <Select
            label="Ban for"
            value={banFor}
            onChange={setBanFor}
            options={[
              ['1h', 'one hour'],
              ['24h', 'one day'],
              ['7d', 'one week'],
              ['30d', 'thirty days'],
              ['36500d', 'until unbanned'],
            ]}
          />
          <ErrorNote error={change.error} />
        </Confirm>
      )}
      {deleting && (
        <ConfirmDelete title={`Delete ${deleting.email || 'this user'}?`} action={remove} onConfirm={() => remove.run(deleting)} onCancel={() => setDeleting(null)}>
          <p>The user, their identities and sessions are removed.</p>
        </ConfirmDelete>
      )}
    </>
  );
}
