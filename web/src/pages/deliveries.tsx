// Outbox deliveries: filter by status and kind, open one for its attempts, replay many after an outage.
import { useEffect, useState } from 'preact/hooks';
import { api, seg } from '../api';
import { href } from '../router';
import type { SectionProps } from './section';
import type { Delivery, DeliveryPage } from '../types';
import { Empty, Failure, Loading } from '../ui/feedback';
import { Select } from '../ui/form';
import { Pager, usePager } from '../ui/pager';
import { DeliveryView, OrderingLine, StatusBadge, TestBadge, lastResult } from './delivery-detail';
import { Replay } from './replay';
import { CaptureLine } from './capture';
import { EndpointsPanel } from './endpoints';

type Status = '' | Delivery['status'];
type Kind = '' | Delivery['kind'];

export function Deliveries({ project, id }: SectionProps) {
  if (id) return <DeliveryView project={project} id={id} />;
  return <DeliveryList project={project} />;
}

function DeliveryList({ project }: SectionProps) {
  const base = `projects/${seg(project.ref)}/outbox/deliveries`;
  const [status, setStatus] = useState<Status>('');
  const [kind, setKind] = useState<Kind>('');
  const [replaying, setReplaying] = useState(false);

  const pager = usePager(async (after) => {
    const q = new URLSearchParams();
    if (status) q.set('status', status);
    if (kind) q.set('kind', kind);
    if (after) q.set('cursor', after);
    const page = await api<DeliveryPage>('GET', `${base}${q.size ? `?${q}` : ''}`);
    return { rows: page.deliveries, next: page.next_cursor ?? null };
  });
  const { rows, setRows, load } = pager;
  useEffect(() => {
    setRows(null);
    void load.run(null);
  }, [status, kind]);

  return (
    <>
      <p class="lead">
        Every webhook call, <code>base.http_request</code> and email is a delivery: <em>pending</em> before its first attempt, then{' '}
        <em>delivered</em>, <em>failed</em> (to be retried with backoff) or <em>dead</em> (no more automatic retries).
      </p>
      <CaptureLine project={project} />
      <EndpointsPanel project={project} quietWhenNone />
      <div class="toolbar filters">
        <Select
          label="Status"
          value={status}
          onChange={setStatus}
          options={[
            ['', 'Any status'],
            ['pending', 'Pending'],
            ['delivered', 'Delivered'],
            ['failed', 'Failed'],
            ['dead', 'Dead'],
          ]}
        />
        <Select
          label="Kind"
          value={kind}
          onChange={setKind}
          options={[
            ['', 'Any kind'],
            ['webhook', 'Webhook'],
            ['http', 'HTTP request'],
            ['email', 'Email'],
          ]}
        />
        <button type="button" onClick={() => load.run(null)} disabled={load.busy}>
          Refresh
        </button>
        <button type="button" class="primary" onClick={() => setReplaying(true)}>
          Replay many…
        </button>
        <a href={href(project.ref, 'blocked-keys')}>Blocked keys</a>
      </div>
      {load.error && !rows && <Failure error={load.error} />}
      {!rows && !load.error && <Loading what="Loading deliveries" />}
      {rows?.length === 0 && <Empty>No deliveries {status || kind ? 'match these filters' : 'yet'}.</Empty>}
      {!!rows?.length && (
        <table>
          <caption class="sr-only">Deliveries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Kind</th>
              <th scope="col">Target</th>
              <th scope="col">Attempts</th>
              <th scope="col">Last result</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr key={d.id}>
                <td>
                  <StatusBadge status={d.status} />
                  <TestBadge d={d} />
                </td>
                <td>{d.kind}</td>
                <td class="mono wrap">
                  <a href={href(project.ref, 'deliveries', d.id)} aria-label={`Delivery ${d.id} to ${d.target}, ${d.status}${d.test ? ', test event' : ''}`}>
                    {d.method ? `${d.method} ` : ''}
                    {d.target}
                  </a>
                  <OrderingLine project={project} d={d} />
                </td>
                <td>{d.attempts}</td>
                <td class="wrap">{lastResult(d)}</td>
                <td>{new Date(d.created_at).toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager pager={pager} more="Load older deliveries" />
      {replaying && <Replay path={`projects/${seg(project.ref)}/outbox/replay`} onClose={() => setReplaying(false)} onDone={() => load.run(null)} />}
    </>
  );
}
