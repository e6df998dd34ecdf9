// Secrets: names and dates only. Values are write-only: typed here, sent once, never shown.
import { useState } from 'preact/hooks';
import { api, seg } from '../api';
import type { SectionProps } from './section';
import type { Secret } from '../types';
import { Empty, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { ConfirmDelete } from '../ui/dialog';
import { Field } from '../ui/form';
import { useAction, useResource } from '../ui/use-resource';

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export function Secrets({ project }: SectionProps) {
  const base = `projects/${seg(project.ref)}/secrets`;
  const list = useResource<Secret[]>(base);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [flash, setFlash] = useState('');
  const [deleting, setDeleting] = useState<Secret | null>(null);

  const save = useAction(async () => {
    const existed = list.data?.some((s) => s.name === name);
    await api('PUT', `${base}/${seg(name)}`, { value });
    setFlash(`Secret ${name} ${existed ? 'replaced' : 'saved'}.`);
    setName('');
    setValue('');
    list.reload();
  });
  const remove = useAction(async (s: Secret) => {
    await api('DELETE', `${base}/${seg(s.name)}`);
    setDeleting(null);
    setFlash(`Secret ${s.name} deleted.`);
    list.reload();
  });
  const nameProblem = name && !NAME.test(name) ? 'Letters, digits and _, not starting with a digit, at most 64 characters.' : '';

  return (
    <>
      <p class="lead">
        Use a secret in webhook headers or in <code>base.http_request</code> as <code>{'{{secret:NAME}}'}</code>. It is substituted when a
        request is sent. Values are encrypted at rest and can never be read back, here or through the API.
      </p>
      {flash && <Notice kind="success">{flash}</Notice>}
      {list.loading && !list.data && <Loading what="Loading secrets" />}
      {list.error && <Failure error={list.error} />}
      {list.data?.length === 0 && <Empty>No secrets yet.</Empty>}
      {!!list.data?.length && (
        <table>
          <caption class="sr-only">Secrets</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Created</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((s) => (
              <tr key={s.name}>
                <td class="mono">{s.name}</td>
                <td>{when(s.created_at)}</td>
                <td>{when(s.updated_at)}</td>
                <td class="row-actions">
                  <button type="button" onClick={() => setName(s.name)} aria-label={`Replace the value of ${s.name}`}>
                    Replace value
                  </button>
                  <button type="button" class="danger" onClick={() => setDeleting(s)} aria-label={`Delete ${s.name}`}>
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
          if (!nameProblem) void save.run();
        }}
      >
        <h2>Set a secret</h2>
        <Field label="Name" name="secret-name" value={name} onInput={setName} required mono placeholder="BILLING_TOKEN" hint={nameProblem || 'An existing name is replaced.'} />
        <Field label="Value" name="secret-value" type="password" autoComplete="new-password" value={value} onInput={setValue} required hint="At most 16 KB. Write-only." />
        <ErrorNote error={save.error} title="Not saved" />
        <button type="submit" class="primary" disabled={save.busy || !!nameProblem}>
          {save.busy ? 'Saving…' : 'Save secret'}
        </button>
      </form>

      {deleting && (
        <ConfirmDelete title={`Delete ${deleting.name}?`} action={remove} onConfirm={() => remove.run(deleting)} onCancel={() => setDeleting(null)}>
          <p>Requests that reference it will fail with an unknown secret until you set it again.</p>
        </ConfirmDelete>
      )}
    </>
  );
}
