// Database webhooks: create (the signing secret is shown once), edit, rotate the secret, delete;
// each one's endpoint health (circuit, rate limit), and enabling one the service disabled.
import { useCallback, useMemo, useState } from 'preact/hooks';
import { api, seg } from '../api';
import { href } from '../router';
import type { SectionProps } from './section';
import type { ReplayOffer, Webhook } from '../types';
import { Badge, Empty, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { Confirm, ConfirmDelete, Dialog } from '../ui/dialog';
import { useAction, useResource } from '../ui/use-resource';
import { OneTimeSecret } from './webhook-secret';
import { WebhookForm } from './webhook-form';
import { WebhookPage } from './webhook-page';
import { DisabledBanner, EndpointCell, EndpointsPanel, ReplayOfferBox, useVisibleRefresh } from './endpoints';

type Mode = { kind: 'create' } | { kind: 'edit'; hook: Webhook } | { kind: 'rotate'; hook: Webhook } | { kind: 'delete'; hook: Webhook } | null;

export function Webhooks({ project, id }: SectionProps) {
  // keyed: another webhook's page starts afresh (its sample, filter and rate fields)
  if (id) return <WebhookPage key={id} project={project} id={id} />;
  return <WebhookList project={project} />;
}

function WebhookList({ project }: SectionProps) {
  const base = `projects/${seg(project.ref)}/webhooks`;
  const list = useResource<Webhook[]>(base);
  const [mode, setMode] = useState<Mode>(null);
  const [secret, setSecret] = useState<{ name: string; value: string; rotated: boolean; previousUntil?: string | null } | null>(null);
  const [flash, setFlash] = useState('');
  const [offer, setOffer] = useState<{ name: string; offer: ReplayOffer } | null>(null);
  const [tick, setTick] = useState(0);
  const refresh = useCallback(() => {
    list.reload();
    setTick((t) => t + 1);
  }, [list.reload]);
  // circuits open and close by themselves: the list follows them while the page is shown
  useVisibleRefresh(list.reload);
  const names = useMemo(() => new Map((list.data ?? []).map((h) => [h.id, h.name])), [list.data]);
  const disabledByService = (list.data ?? []).filter((h) => h.disabled_reason === 'failing' && !h.enabled);

  /** After enabling a webhook the service had disabled, its answer may offer a replay. */
  const offerFrom = (saved: Webhook) => setOffer(saved.enabled && saved.replay_offer && saved.replay_offer.deliveries > 0 ? { name: saved.name, offer: saved.replay_offer } : null);
  const enable = useAction(async (hook: Webhook) => {
    const r = await api<Webhook>('PATCH', `${base}/${seg(hook.id)}`, { enabled: true });
    setFlash(`Webhook “${hook.name}” enabled: its circuit is closed and it sends again.`);
    offerFrom(r);
    refresh();
  });

  const rotate = useAction(async (hook: Webhook) => {
    const r = await api<Webhook>('PATCH', `${base}/${seg(hook.id)}`, { rotate_secret: true });
    setMode(null);
    if (r.signing_secret) setSecret({ name: hook.name, value: r.signing_secret, rotated: true, previousUntil: r.previous_secret_expires_at });
    else setFlash(`New key pair for “${hook.name}”: give receivers the new public key; the previous key keeps signing until ${when(r.previous_secret_expires_at ?? '')}.`);
    list.reload();
  });
  const remove = useAction(async (hook: Webhook) => {
    await api('DELETE', `${base}/${seg(hook.id)}`);
    setMode(null);
    setFlash(`Webhook “${hook.name}” deleted.`);
    list.reload();
  });

  return (
    <>
      <p class="lead">
        A webhook sends a signed HTTP request (Standard Webhooks) to your URL after every committed change of a table. Headers may use{' '}
        <code>{'{{secret:NAME}}'}</code> placeholders from Secrets.
      </p>
      <div class="toolbar">
        <button type="button" class="primary" onClick={() => setMode({ kind: 'create' })}>
          New webhook
        </button>
        <button type="button" onClick={refresh} disabled={list.loading}>
          Refresh
        </button>
      </div>
      {secret && <OneTimeSecret {...secret} onDone={() => setSecret(null)} />}
      {flash && <Notice kind="success">{flash}</Notice>}
      {offer && <ReplayOfferBox project={project} name={offer.name} offer={offer.offer} onClose={() => setOffer(null)} />}
      {disabledByService.map((h) => (
        <DisabledBanner key={h.id} hook={h} busy={enable.busy} onEnable={() => void enable.run(h)} />
      ))}
      <ErrorNote error={enable.error} title="Not enabled" />
      {list.loading && !list.data && <Loading what="Loading webhooks" />}
      {list.error && <Failure error={list.error} plan={project.plan} projectRef={project.ref} />}
      {list.data?.length === 0 && <Empty>No webhooks yet. Create one to get a request for every insert, update or delete on a table.</Empty>}
      {!!list.data?.length && (
        <table>
          <caption class="sr-only">Webhooks</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Table and events</th>
              <th scope="col">URL</th>
              <th scope="col">Endpoint</th>
              <th scope="col">Signature</th>
              <th scope="col">Updated</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((h) => (
              <tr key={h.id}>
                <td>
                  <a href={href(project.ref, 'webhooks', h.id)}>
                    <strong>{h.name}</strong>
                  </a>{' '}
                  {!h.enabled && (h.disabled_reason === 'failing' ? <Badge tone="bad">disabled by the service</Badge> : <Badge tone="muted">disabled</Badge>)}
                </td>
                <td>
                  <code>{h.table}</code>{' '}
                  <span class="dim">{h.events.map((e) => (e === 'UPDATE' && h.update_columns ? `UPDATE of ${h.update_columns.join(', ')}` : e)).join(', ')}</span>
                  <div class="small dim" title={h.ordering === 'row' ? "each row's changes in commit order, one after another" : 'changes sent in parallel, in no set order'}>
                    {h.ordering === 'row' ? 'ordered per row' : 'not ordered'}
                  </div>
                  {h.filter ? (
                    <div class="small dim">
                      only rows matching <code>{JSON.stringify(h.filter)}</code>
                    </div>
                  ) : null}
                  {h.columns || h.template ? (
                    <div class="small dim">
                      {h.columns && (
                        <>
                          columns <code>{h.columns.join(', ')}</code>
                        </>
                      )}
                      {h.columns && h.template && '; '}
                      {h.template && 'custom body template'}
                    </div>
                  ) : null}
                </td>
                <td class="mono wrap webhook-url">{h.url}</td>
                <td>
                  <EndpointCell hook={h} />
                </td>
                <td>
                  {h.signature_scheme === 'v1a' ? (
                    <>
                      v1a <span class="dim">ed25519</span>
                      <br />
                      <code class="wrap" aria-label={`Public key of ${h.name}`}>
                        {h.public_key}
                      </code>
                    </>
                  ) : (
                    <>
                      v1 <span class="dim">shared secret</span>
                    </>
                  )}
                </td>
                <td>{when(h.updated_at ?? h.created_at)}</td>
                <td class="row-actions wrap-actions">
                  <a class="button" href={href(project.ref, 'webhooks', h.id)} aria-label={`Preview, test and backfill ${h.name}`}>
                    Preview
                  </a>
                  <button type="button" onClick={() => setMode({ kind: 'edit', hook: h })} aria-label={`Edit ${h.name}`}>
                    Edit
                  </button>
                  <button type="button" onClick={() => setMode({ kind: 'rotate', hook: h })} aria-label={`Rotate the signing secret of ${h.name}`}>
                    Rotate secret
                  </button>
                  <button type="button" class="danger" onClick={() => setMode({ kind: 'delete', hook: h })} aria-label={`Delete ${h.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && <EndpointsPanel project={project} names={names} tick={tick} />}

      {(mode?.kind === 'create' || mode?.kind === 'edit') && (
        <Dialog title={mode.kind === 'create' ? 'New webhook' : `Edit ${mode.hook.name}`} onClose={() => setMode(null)}>
          <WebhookForm
            base={base}
            hook={mode.kind === 'edit' ? mode.hook : undefined}
            onSaved={(saved) => {
              setMode(null);
              setFlash('');
              if (saved.signing_secret) setSecret({ name: saved.name, value: saved.signing_secret, rotated: mode.kind === 'edit', previousUntil: saved.previous_secret_expires_at });
              else if (mode.kind === 'create' && saved.public_key) setFlash(`Webhook “${saved.name}” created. Receivers verify its requests with the public key listed below.`);
              else setFlash(`Webhook “${saved.name}” saved.`);
              if (mode.kind === 'edit' && !mode.hook.enabled) offerFrom(saved);
              refresh();
            }}
            onCancel={() => setMode(null)}
          />
        </Dialog>
      )}
      {mode?.kind === 'rotate' && (
        <Confirm title="Rotate the signing secret?" confirmLabel="Rotate" busy={rotate.busy} onConfirm={() => rotate.run(mode.hook)} onCancel={() => setMode(null)}>
          {mode.hook.signature_scheme === 'v1a' ? (
            <p>
              A new ed25519 key pair is issued for <strong>{mode.hook.name}</strong>; its public key is listed here. For a grace period the previous
              key keeps signing beside it (requests carry both signatures), so you can give receivers the new public key without dropping requests.
            </p>
          ) : (
            <p>
              A new signing secret is issued for <strong>{mode.hook.name}</strong> and shown once. For a grace period the previous secret keeps
              signing beside it (requests carry both signatures), so you can update your receiver without dropping requests.
            </p>
          )}
          <ErrorNote error={rotate.error} />
        </Confirm>
      )}
      {mode?.kind === 'delete' && (
        <ConfirmDelete title="Delete this webhook?" action={remove} onConfirm={() => remove.run(mode.hook)} onCancel={() => setMode(null)}>
          <p>
            <strong>{mode.hook.name}</strong> stops sending at once; messages already queued for it end as <em>dead</em> without a request.
          </p>
        </ConfirmDelete>
      )}
    </>
  );
}
