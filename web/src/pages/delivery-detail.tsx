// One delivery: where it goes, every attempt with its outcome, the last error, and a manual retry.
import { useEffect, useState } from 'preact/hooks';
import { api, seg } from '../api';
import { href } from '../router';
import type { Project, Delivery, DeliveryDetail } from '../types';
import { Badge, Empty, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { useAction, useResource } from '../ui/use-resource';

/** How many times a delivery not recorded yet is asked for again (1.5 s apart). */
const RECORD_TRIES = 20;

const tone = { delivered: 'ok', failed: 'warn', dead: 'bad', pending: 'muted' } as const;

export function StatusBadge({ status }: { status: Delivery['status'] }) {
  return <Badge tone={tone[status] ?? 'muted'}>{status}</Badge>;
}

/** A test event (POST .../webhooks/{id}/test), not a change of the table. */
export function TestBadge({ d }: { d: Pick<Delivery, 'test'> }) {
  if (!d.test) return null;
  return (
    <span class="badge test" title="a test event sent from the webhook's page, not a change of the table">
      test
    </span>
  );
}

export function lastResult(d: Delivery): string {
  const code = d.last_http_status ? `HTTP ${d.last_http_status}` : d.last_smtp_code ? `SMTP ${d.last_smtp_code}` : '';
  if (d.last_error && code && d.last_error.startsWith(code)) return d.last_error;
  return [code, d.last_error].filter(Boolean).join(': ') || '—';
}

/** "waiting behind <head> since <time>": a message queued behind the head of its ordering key. */
export function WaitingFor({ project, d }: { project: Project; d: Delivery }) {
  if (!d.waiting_for) return null;
  return (
    <>
      waiting behind{' '}
      <a class="mono" href={href(project.ref, 'deliveries', d.waiting_for.message_id)} aria-label={`head delivery ${d.waiting_for.message_id}`}>
        {d.waiting_for.message_id}
      </a>{' '}
      since {when(d.waiting_for.since)}
    </>
  );
}

/** Under a delivery's target in the list: its ordering key and place, and what it waits for. */
export function OrderingLine({ project, d }: { project: Project; d: Delivery }) {
  if (!d.ordering_key) return null;
  return (
    <div class="small dim ordering">
      <span class="mono">{d.ordering_key}</span>
      {d.seq != null && ` · seq ${d.seq}`}
      {d.waiting_for && (
        <>
          {' · '}
          <WaitingFor project={project} d={d} />
        </>
      )}
    </div>
  );
}

export function DeliveryView({ project, id }: { project: Project; id: string }) {
  const path = `projects/${seg(project.ref)}/outbox/deliveries/${seg(id)}`;
  const d = useResource<DeliveryDetail>(path);
  const [flash, setFlash] = useState('');
  // The run a retry queued: the listing is a projection of the event log and may still show the
  // previous run for a moment, so the page follows until that run has appeared.
  const [awaitRun, setAwaitRun] = useState(0);
  const retry = useAction(async () => {
    const r = await api<{ run: number }>('POST', `${path}/retry`);
    setFlash(`Queued again as run ${r.run}, with a fresh retry budget.`);
    setAwaitRun(r.run);
    d.reload();
  });
  // Follow a delivery that is on its way (after a retry, or before its first attempt).
  const pending = d.data?.status === 'pending' || (!!d.data && d.data.run < awaitRun);
  useEffect(() => {
    if (!pending || d.loading) return;
    const t = setTimeout(d.reload, 1500);
    return () => clearTimeout(t);
  }, [pending, d.loading, d.data]);
  // A message just queued (a test event's link) is listed once the projector has seen it: for a
  // while, a 404 means "not recorded yet" and the page asks again.
  const [misses, setMisses] = useState(0);
  const unrecorded = !d.data && d.error?.code === 'delivery_not_found' && misses < RECORD_TRIES;
  useEffect(() => {
    if (!unrecorded || d.loading) return;
    const t = setTimeout(() => (setMisses((m) => m + 1), d.reload()), 1500);
    return () => clearTimeout(t);
  }, [unrecorded, d.loading, d.error]);

  return (
    <>
      <p>
        <a href={href(project.ref, 'deliveries')}>← All deliveries</a>
      </p>
      {d.loading && !d.data && !unrecorded && <Loading what="Loading delivery" />}
      {unrecorded && <Loading what="Not recorded yet: waiting for the outbox to pick the message up" />}
      {d.error && !unrecorded && <Failure error={d.error} />}
      {d.data && (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <StatusBadge status={d.data.status} />
              <TestBadge d={d.data} />
            </dd>
            {d.data.test && (
              <>
                <dt>Test event</dt>
                <dd>Sent with “Send test event”, not a change of the table: its payload carries "test": true (<code>{'{{test}}'}</code> in a body template).</dd>
              </>
            )}
            <dt>Id (webhook-id)</dt>
            <dd class="mono">{d.data.id}</dd>
            <dt>Kind</dt>
            <dd>{d.data.kind}</dd>
            <dt>Target</dt>
            <dd class="mono wrap">
              {d.data.method ? `${d.data.method} ` : ''}
              {d.data.target}
            </dd>
            {d.data.ordering_key && (
              <>
                <dt>Ordering key</dt>
                <dd>
                  <span class="mono wrap">{d.data.ordering_key}</span>
                  {d.data.seq != null && <span class="dim"> · seq {d.data.seq}</span>}
                </dd>
              </>
            )}
            {d.data.waiting_for && (
              <>
                <dt>Waiting</dt>
                <dd>
                  <WaitingFor project={project} d={d.data} /> (the head of its key; <a href={href(project.ref, 'blocked-keys')}>blocked keys</a>)
                </dd>
              </>
            )}
            <dt>Attempts</dt>
            <dd>
              {d.data.attempts} in this run{d.data.run > 1 ? ` (run ${d.data.run}, ${d.data.total_attempts} in all)` : ''}
            </dd>
            <dt>Last result</dt>
            <dd>{lastResult(d.data)}</dd>
            {d.data.next_attempt_at && (
              <>
                <dt>Next attempt</dt>
                <dd>{when(d.data.next_attempt_at)}</dd>
              </>
            )}
            {d.data.callback && (
              <>
                <dt>Callback</dt>
                <dd>
                  <code>{d.data.callback.function}</code> {d.data.callback.status ?? 'not called yet'}
                  {d.data.callback.error ? `: ${d.data.callback.error}` : ''}
                </dd>
              </>
            )}
            {d.data.delivered_at && (
              <>
                <dt>Delivered</dt>
                <dd>{when(d.data.delivered_at)}</dd>
              </>
            )}
            <dt>Created</dt>
            <dd>{when(d.data.created_at)}</dd>
          </dl>
          {d.data.last_error && (
            <div class="error" role="note">
              <strong>Last error:</strong> <span class="mono wrap">{d.data.last_error}</span>
            </div>
          )}
          <div class="toolbar">
            <button type="button" onClick={d.reload}>
              Refresh
            </button>
            {(d.data.status === 'failed' || d.data.status === 'dead') && (
              <button type="button" class="primary" disabled={retry.busy} onClick={() => retry.run()}>
                {retry.busy ? 'Retrying…' : 'Retry now'}
              </button>
            )}
          </div>
          {flash && <Notice kind="success">{flash}</Notice>}
          <ErrorNote error={retry.error} title="Not retried" />
          <h2>Attempt history</h2>
          {d.data.attempt_history.length === 0 ? (
            <Empty>No attempt yet: the delivery is waiting for its first try.</Empty>
          ) : (
            <table>
              <caption class="sr-only">Attempts, oldest first</caption>
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Attempt</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Code</th>
                  <th scope="col">Error</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Started</th>
                </tr>
              </thead>
              <tbody>
                {d.data.attempt_history.map((a) => (
                  <tr key={`${a.run}.${a.attempt}`}>
                    <td>{a.run}</td>
                    <td>{a.attempt}</td>
                    <td>
                      <StatusBadge status={a.outcome} />
                    </td>
                    <td>{a.http_status ? `HTTP ${a.http_status}` : a.smtp_code ? `SMTP ${a.smtp_code}` : '—'}</td>
                    <td class="wrap">{a.error ?? '—'}</td>
                    <td>{a.duration_ms != null ? `${a.duration_ms} ms` : '—'}</td>
                    <td>{when(a.started_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {d.data.last_response_body && (
            <>
              <h2>Last response body</h2>
              <pre class="body">{d.data.last_response_body}</pre>
            </>
          )}
        </>
      )}
    </>
  );
}
