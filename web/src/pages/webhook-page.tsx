// One webhook (#/p/<ref>/webhooks/<id>): what it sends (table, events, filter, columns, body
// template), Edit, the preview and test event panel, and its backfills.
import { useState } from 'preact/hooks';
import { seg } from '../api';
import { href } from '../router';
import type { Project, Webhook } from '../types';
import { Badge, Failure, Loading, Notice, when } from '../ui/feedback';
import { Dialog } from '../ui/dialog';
import { useResource } from '../ui/use-resource';
import { OneTimeSecret } from './webhook-secret';
import { WebhookForm } from './webhook-form';
import { WebhookPreviewPanel } from './webhook-preview';
import { WebhookBackfills } from './webhook-backfills';

export function WebhookPage({ project, id }: { project: Project; id: string }) {
  const base = `projects/${seg(project.ref)}/webhooks`;
  const hook = useResource<Webhook>(`${base}/${seg(id)}`);
  const [editing, setEditing] = useState(false);
  const [flash, setFlash] = useState('');
  const [secret, setSecret] = useState<{ name: string; value: string; previousUntil?: string | null } | null>(null);
  const h = hook.data;

  return (
    <>
      <p>
        <a href={href(project.ref, 'webhooks')}>← All webhooks</a>
      </p>
      {hook.loading && !h && <Loading what="Loading webhook" />}
      {hook.error && <Failure error={hook.error} />}
      {h && (
        <>
          <h2 class="webhook-title">
            {h.name} {!h.enabled && <Badge tone={h.disabled_reason === 'failing' ? 'bad' : 'muted'}>disabled</Badge>}
          </h2>
          {secret && <OneTimeSecret {...secret} rotated onDone={() => setSecret(null)} />}
          {flash && <Notice kind="success">{flash}</Notice>}
          <dl class="facts">
            <dt>Table</dt>
            <dd>
              <code>{h.table}</code>
            </dd>
            <dt>Events</dt>
            <dd>{h.events.map((e) => (e === 'UPDATE' && h.update_columns ? `UPDATE of ${h.update_columns.join(', ')}` : e)).join(', ')}</dd>
            <dt>URL</dt>
            <dd class="mono wrap">{h.url}</dd>
            <dt>Ordering</dt>
            <dd>{h.ordering === 'row' ? 'row order' : 'none'}</dd>
            <dt>Row filter</dt>
            <dd>{h.filter ? <code class="wrap">{JSON.stringify(h.filter)}</code> : <span class="dim">every change</span>}</dd>
            <dt>Columns sent</dt>
            <dd>{h.columns ? <code class="wrap">{h.columns.join(', ')}</code> : <span class="dim">every column</span>}</dd>
            <dt>Body</dt>
            <dd>{h.template ? <pre class="body" aria-label="Body template">{JSON.stringify(h.template, null, 2)}</pre> : <span class="dim">the row-change payload</span>}</dd>
            <dt>Updated</dt>
            <dd>{when(h.updated_at ?? h.created_at)}</dd>
          </dl>
          <div class="toolbar">
            <button type="button" onClick={() => setEditing(true)} aria-label={`Edit ${h.name}`}>
              Edit
            </button>
            <button type="button" onClick={hook.reload}>
              Refresh
            </button>
          </div>
          <WebhookPreviewPanel project={project} hook={h} />
          <WebhookBackfills project={project} hook={h} />
          {editing && (
            <Dialog title={`Edit ${h.name}`} onClose={() => setEditing(false)}>
              <WebhookForm
                base={base}
                hook={h}
                onSaved={(saved) => {
                  setEditing(false);
                  if (saved.signing_secret) setSecret({ name: saved.name, value: saved.signing_secret, previousUntil: saved.previous_secret_expires_at });
                  setFlash(`Webhook “${saved.name}” saved.`);
                  hook.reload();
                }}
                onCancel={() => setEditing(false)}
              />
            </Dialog>
          )}
        </>
      )}
    </>
  );
}
