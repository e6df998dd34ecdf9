// Ordered delivery (docs/delivery.md): the ordering keys whose head delivery has not ended, with
// what waits behind it (GET /v1/projects/{ref}/outbox/blocked-keys), and "Skip head", behind a
// confirmation, that ends the head dead so the next message of the key goes
// (POST .../outbox/blocked-keys/skip). Keys may carry a customer's primary key values: text only.
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, seg } from '../api';
import { href } from '../router';
import type { SectionProps } from './section';
import type { BlockedKey, BlockedKeysPage, SkipResult, Webhook } from '../types';
import { Badge, Empty, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { Confirm } from '../ui/dialog';
import { Pager, usePager } from '../ui/pager';
import { useAction, useResource } from '../ui/use-resource';
import { useVisibleRefresh } from './endpoints';

const reasons: Record<BlockedKey['head']['reason'], { tone: 'warn' | 'bad' | 'muted'; text: string; title: string }> = {
  retry: { tone: 'warn', text: 'retrying', title: 'failed, waiting for its next attempt on the retry ladder' },
  held: { tone: 'bad', text: 'held', title: "its endpoint holds it (open circuit, rate limit or window): no attempt is spent" },
  next: { tone: 'muted', text: 'next', title: 'just taken from the queue, on its way' },
};

/** The ordering key as written by the service: row:<webhook id>:<primary key>, key:<ordering_key>. */
export function OrderingKey({ value, names }: { value: string; names?: Map<string, string> }) {
  const row = /^row:([^:]+):(.*)$/.exec(value);
  if (row) {
    const name = names?.get(row[1]);
    return (
      <span class="mono wrap" title={value}>
        {name ? (
          <>
            row {row[2]} <span class="dim">of {name}</span>
          </>
        ) : (
          value
        )}
      </span>
    );
  }
  return <span class="mono wrap">{value}</span>;
}

const skipOutcome = (key: string, r: SkipResult) =>
  r.next === 'next'
    ? `Skipped the head of ${key}: it ended dead, and the next message of the key was sent on.`
    : r.next === 'drained'
      ? `Skipped the head of ${key}: it ended dead; no message waited behind it, so the key flows again.`
      : `Skipped ${r.skipped.message_id} of ${key}: it ended dead; the key had already moved on.`;

export function BlockedKeys({ project }: SectionProps) {
  const base = `projects/${seg(project.ref)}/outbox/blocked-keys`;
  const hooks = useResource<Webhook[]>(`projects/${seg(project.ref)}/webhooks`);
  const names = useMemo(() => new Map((hooks.data ?? []).map((h) => [h.id, h.name])), [hooks.data]);
  const [confirm, setConfirm] = useState<BlockedKey | null>(null);
  const [flash, setFlash] = useState('');

  const pager = usePager(async (after) => {
    const page = await api<BlockedKeysPage>('GET', `${base}${after ? `?cursor=${encodeURIComponent(after)}` : ''}`);
    return { rows: page.keys, next: page.next_cursor ?? null };
  });
  const { rows, load } = pager;
  // one stable reload for the timer (load.run changes with every render)
  const run = useRef(load.run);
  run.current = load.run;
  const reload = useCallback(() => void run.current(null), []);
  useEffect(reload, []);
  // heads end and keys drain by themselves: the list follows while the page is shown
  useVisibleRefresh(reload);

  const skip = useAction(async (k: BlockedKey) => {
    try {
      const r = await api<SkipResult>('POST', `${base}/skip`, { ordering_key: k.ordering_key });
      setFlash(skipOutcome(k.ordering_key, r));
      setConfirm(null);
    } finally {
      reload();
    }
  });

  return (
    <>
      <p class="lead">
        With ordered delivery (a webhook's <em>row order</em>, or <code>base.http_request(..., ordering_key =&gt; ...)</code>) the messages of one key
        go one after another: while the key's head delivery has not ended (it is being retried, or its endpoint holds it), the later ones wait
        behind it. <strong>Skip head</strong> ends the head <em>dead</em> without another attempt (it can still be retried from its page) and lets
        the next message go.
      </p>
      <div class="toolbar">
        <button type="button" onClick={reload} disabled={load.busy}>
          Refresh
        </button>
        <a href={href(project.ref, 'deliveries')}>All deliveries</a>
      </div>
      {flash && <Notice kind="success">{flash}</Notice>}
      {load.error && !rows && <Failure error={load.error} />}
      {!rows && !load.error && <Loading what="Loading blocked keys" />}
      {rows?.length === 0 && <Empty>No key is blocked: every ordered message is on its way or delivered.</Empty>}
      {!!rows?.length && (
        <table>
          <caption class="sr-only">Blocked ordering keys</caption>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Webhook</th>
              <th scope="col">Blocked since</th>
              <th scope="col">Head delivery</th>
              <th scope="col">Reason</th>
              <th scope="col">Queued</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((k) => {
              const r = reasons[k.head.reason] ?? { tone: 'muted' as const, text: k.head.reason, title: '' };
              return (
                <tr key={k.ordering_key} data-key={k.ordering_key}>
                  <td class="ordering-key">
                    <OrderingKey value={k.ordering_key} />
                  </td>
                  <td>{k.webhook_id ? (names.get(k.webhook_id) ?? <span class="mono">{k.webhook_id}</span>) : <span class="dim">base.http_request</span>}</td>
                  <td>{when(k.since)}</td>
                  <td>
                    <a class="mono" href={href(project.ref, 'deliveries', k.head.message_id)} aria-label={`Head delivery ${k.head.message_id} of ${k.ordering_key}`}>
                      {k.head.message_id}
                    </a>
                    <div class="small dim">
                      seq {k.head.seq}
                      {k.head.run > 1 ? `, run ${k.head.run}` : ''}, head since {when(k.head.since)}
                    </div>
                  </td>
                  <td>
                    <Badge tone={r.tone}>{r.text}</Badge>
                    <div class="small dim">{r.title}</div>
                  </td>
                  <td>{k.queued}</td>
                  <td class="row-actions">
                    <button type="button" class="danger" onClick={() => (skip.clearError(), setConfirm(k))} aria-label={`Skip head of ${k.ordering_key}`}>
                      Skip head
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <Pager pager={pager} more="Load more keys" />
      {confirm && (
        <Confirm title="Skip the head of this key?" confirmLabel="Skip head" danger busy={skip.busy} onConfirm={() => void skip.run(confirm)} onCancel={() => setConfirm(null)}>
          <p>
            Delivery <span class="mono">{confirm.head.message_id}</span> (seq {confirm.head.seq}) of <OrderingKey value={confirm.ordering_key} names={names} />{' '}
            ends <em>dead</em> and is not attempted again; {confirm.queued === 0 ? 'no message waits behind it, so the key flows again' : `the next of the ${confirm.queued} queued behind it is sent`}.
            The receiver then gets the key's later changes without this one; <strong>Retry now</strong> on the delivery's page sends it once more.
          </p>
          <ErrorNote error={skip.error} title="Not skipped" />
        </Confirm>
      )}
    </>
  );
}
