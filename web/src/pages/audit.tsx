// The audit trail: every change made through the Management API, newest first (never a secret value).
import { useEffect } from 'preact/hooks';
import { api, seg } from '../api';
import type { SectionProps } from './section';
import type { AuditEntry } from '../types';
import { Empty, Failure, Loading, when } from '../ui/feedback';
import { Pager, usePager } from '../ui/pager';

const PAGE = 50;

/** An operator (npm run admin) has no owner or token; an owner's change names the token it used. */
function who(actor: AuditEntry['actor']): string {
  if (actor?.operator) return `operator: ${actor.operator}`;
  if (actor?.setup_link_id) return `setup link ${actor.setup_link_id.slice(0, 8)}`;
  return actor?.token_name ? `token “${actor.token_name}”` : 'owner';
}

export function Audit({ project }: SectionProps) {
  const base = `projects/${seg(project.ref)}/audit`;
  // Pages of PAGE entries; `before` is the id of the oldest entry shown so far.
  const pager = usePager(async (before) => {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (before) q.set('before', before);
    const page = await api<AuditEntry[]>('GET', `${base}?${q}`);
    return { rows: page, next: page.length === PAGE ? page[page.length - 1].id : null };
  });
  const { rows, load } = pager;
  useEffect(() => void load.run(null), []);

  return (
    <>
      <p class="lead">Who changed what and when, for every change made through the Management API or this page, and by an operator with <code>npm run admin</code>.</p>
      {load.error && !rows && <Failure error={load.error} />}
      {!rows && !load.error && <Loading what="Loading the audit trail" />}
      {rows?.length === 0 && <Empty>Nothing changed yet.</Empty>}
      {!!rows?.length && (
        <table>
          <caption class="sr-only">Audit trail, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Action</th>
              <th scope="col">Resource</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((a) => (
              <tr key={a.id}>
                <td>{when(a.created_at)}</td>
                <td>{who(a.actor)}</td>
                <td>
                  <code>{a.action}</code>
                </td>
                <td class="mono wrap">
                  {a.resource_type}
                  {a.resource_id ? ` ${a.resource_id}` : ''}
                </td>
                <td class="small">
                  {a.details && Object.keys(a.details).length
                    ? Object.entries(a.details).map(([k, v]) => (
                        <div key={k}>
                          <span class="dim">{k}</span> <span class="mono wrap">{typeof v === 'string' ? v : JSON.stringify(v)}</span>
                        </div>
                      ))
                    : '—'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager pager={pager} more="Load older entries" />
    </>
  );
}
