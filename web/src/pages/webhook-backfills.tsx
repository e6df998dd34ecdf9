// Backfills of a webhook (docs/delivery.md, "Backfills"): send the rows already in its table (all,
// or those matching a filter) as BACKFILL events, at a rate; the webhook's backfills with their
// state and progress (followed while one runs); Pause, Resume, and Cancel behind a confirmation.
// last_error may quote the project database: rendered as text only.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiFailure, seg } from '../api';
import type { Backfill, Project, Webhook } from '../types';
import { Badge, Empty, ErrorNote, Failure, Loading, Notice, when } from '../ui/feedback';
import { Confirm } from '../ui/dialog';
import { Field, TextArea } from '../ui/form';
import { useAction, useResource } from '../ui/use-resource';

/** How often the list is read again while a backfill runs. */
const FOLLOW_MS = 1000;

const tones: Record<Backfill['state'], 'ok' | 'bad' | 'warn' | 'muted'> = { running: 'ok', paused: 'warn', done: 'ok', cancelled: 'muted', failed: 'bad' };

const count = (n: number) => n.toLocaleString('en-US');

/** rows_done of rows_estimated as a bar and in words; without an estimate, the bar is indeterminate while it runs. */
function Progress({ b }: { b: Backfill }) {
  const est = b.rows_estimated;
  const ended = b.state === 'done';
  const max = est && est > 0 ? Math.max(est, b.rows_done) : ended ? 1 : undefined;
  const value = est && est > 0 ? b.rows_done : ended ? 1 : undefined;
  const pct = est && est > 0 ? Math.min(100, Math.floor((b.rows_done / est) * 100)) : ended ? 100 : null;
  return (
    <div class="backfill-progress">
      {/* keyed: a bar without a value (indeterminate) must be a fresh element, not one whose value was cleared to 0 */}
      {value === undefined ? (
        <progress key="indeterminate" aria-label={`Progress of backfill ${b.id}`} />
      ) : (
        <progress key="determinate" max={max} value={value} aria-label={`Progress of backfill ${b.id}`} />
      )}
      <div class="small">
        {count(b.rows_done)} of {est === null ? 'unknown' : `~${count(est)}`} rows{pct !== null && ` (${pct}%)`}
      </div>
    </div>
  );
}

export function WebhookBackfills({ project, hook }: { project: Project; hook: Webhook }) {
  const base = `projects/${seg(project.ref)}/webhooks/${seg(hook.id)}/backfills`;
  const list = useResource<Backfill[]>(base);
  // the webhook's own filter to start with; emptied, every row
  const [filterText, setFilterText] = useState(hook.filter ? JSON.stringify(hook.filter, null, 2) : '');
  const [rate, setRate] = useState('');
  const [flash, setFlash] = useState('');
  const [cancelling, setCancelling] = useState<Backfill | null>(null);

  // follow a running backfill: read the list again a moment after each answer
  const running = (list.data ?? []).some((b) => b.state === 'running');
  useEffect(() => {
    if (!running || list.loading) return;
    const t = setTimeout(list.reload, FOLLOW_MS);
    return () => clearTimeout(t);
  }, [running, list.loading, list.data]);

  const start = useAction(async () => {
    let filter: Record<string, unknown> | null = null;
    if (filterText.trim()) {
      try {
        filter = JSON.parse(filterText);
      } catch (e) {
        throw new ApiFailure(0, 'invalid_filter', `The filter is not JSON: ${(e as Error).message}`);
      }
      if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) throw new ApiFailure(0, 'invalid_filter', 'The filter is a JSON object, e.g. {"status": "paid"}; empty for every row.');
    }
    const rateText = rate.trim();
    if (rateText && !(/^\d+$/.test(rateText) && Number(rateText) >= 1 && Number(rateText) <= 10_000)) {
      throw new ApiFailure(0, 'invalid_rate', 'The rate is a whole number of rows per second from 1 to 10000, or empty for the default.');
    }
    const body: { filter: Record<string, unknown> | null; rate?: number } = { filter };
    if (rateText) body.rate = Number(rateText);
    const b = await api<Backfill>('POST', base, body);
    setFlash(`Backfill started: ${b.rows_estimated === null ? 'the rows' : `about ${count(b.rows_estimated)} rows`} at up to ${count(b.rate)} a second.`);
    list.reload();
  });
  const act = useAction(async (b: Backfill, action: 'pause' | 'resume' | 'cancel') => {
    try {
      const r = await api<Backfill>('POST', `${base}/${seg(b.id)}/${action}`);
      setFlash(r.state === 'paused' ? 'Backfill paused: it keeps its place.' : r.state === 'running' ? 'Backfill resumed where it stopped.' : `Backfill ${r.state}.`);
      setCancelling(null);
    } finally {
      list.reload();
    }
  });
  const underWay = (list.data ?? []).some((b) => b.state === 'running' || b.state === 'paused');

  return (
    <section class="panel backfills" aria-labelledby="backfills-title">
      <h2 id="backfills-title">Backfills</h2>
      <p class="hint">
        Sends the rows already in <code>{hook.table}</code> as <code>BACKFILL</code> events, in primary-key order, each through the outbox like a
        change (columns and body template apply). A row changed meanwhile never reaches the receiver older after newer; this needs the webhook's{' '}
        <em>row order</em>. One backfill at a time.
      </p>
      {hook.ordering !== 'row' && (
        <Notice kind="warning">This webhook is not in row order: the service refuses a backfill until its Ordering is set to “Row order”.</Notice>
      )}
      <form
        class="grid2"
        onSubmit={(e) => {
          e.preventDefault();
          setFlash('');
          void start.run();
        }}
      >
        <TextArea
          label="Backfill filter"
          value={filterText}
          onInput={setFilterText}
          mono
          rows={3}
          placeholder={'{"status": "paid"}'}
          hint="JSON row filter (the webhook's form): only matching rows are sent. Starts as the webhook's own filter; empty: every row."
        />
        <Field
          label="Rate (rows/second)"
          type="number"
          value={rate}
          onInput={setRate}
          min={1}
          max={10000}
          placeholder="the service's default (500)"
          hint="At most this many rows a second are enqueued, leaving room for live changes."
        />
        <div class="actions start">
          <button type="submit" class="primary" disabled={start.busy || underWay} title={underWay ? 'A backfill is under way' : undefined}>
            {start.busy ? 'Starting…' : 'Start backfill'}
          </button>
        </div>
      </form>
      <ErrorNote error={start.error} title="Not started" />
      {!cancelling && <ErrorNote error={act.error} title="Not changed" />}
      {flash && <Notice kind="success">{flash}</Notice>}
      {list.loading && !list.data && <Loading what="Loading backfills" />}
      {list.error && <Failure error={list.error} />}
      {list.data?.length === 0 && <Empty>No backfill yet.</Empty>}
      {!!list.data?.length && (
        <table>
          <caption class="sr-only">Backfills, newest first</caption>
          <thead>
            <tr>
              <th scope="col">State</th>
              <th scope="col">Progress</th>
              <th scope="col">Speed</th>
              <th scope="col">Errors</th>
              <th scope="col">Started</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((b) => (
              <tr key={b.id} data-backfill={b.id}>
                <td>
                  <Badge tone={tones[b.state] ?? 'muted'}>{b.state}</Badge>
                  {b.waiting && b.state === 'running' && <div class="small backfill-waiting">waiting: {b.waiting}</div>}
                  {b.filter && (
                    <div class="small dim">
                      rows matching <code class="wrap">{JSON.stringify(b.filter)}</code>
                    </div>
                  )}
                </td>
                <td>
                  <Progress b={b} />
                </td>
                <td>
                  {b.rows_per_second !== null ? `${b.rows_per_second} rows/s` : '—'}
                  <div class="small dim">at most {count(b.rate)}/s</div>
                </td>
                <td>
                  {b.errors}
                  {b.last_error && <div class="small wrap">{b.last_error}</div>}
                </td>
                <td>
                  {when(b.created_at)}
                  {b.finished_at && <div class="small dim">ended {when(b.finished_at)}</div>}
                </td>
                <td class="row-actions">
                  {b.state === 'running' && (
                    <button type="button" disabled={act.busy} onClick={() => void act.run(b, 'pause')} aria-label={`Pause backfill ${b.id}`}>
                      Pause
                    </button>
                  )}
                  {b.state === 'paused' && (
                    <button type="button" disabled={act.busy} onClick={() => void act.run(b, 'resume')} aria-label={`Resume backfill ${b.id}`}>
                      Resume
                    </button>
                  )}
                  {(b.state === 'running' || b.state === 'paused') && (
                    <button type="button" class="danger" onClick={() => (act.clearError(), setCancelling(b))} aria-label={`Cancel backfill ${b.id}`}>
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cancelling && (
        <Confirm title="Cancel this backfill?" confirmLabel="Cancel backfill" danger busy={act.busy} onConfirm={() => void act.run(cancelling, 'cancel')} onCancel={() => setCancelling(null)}>
          <p>
            It stops after the chunk under way, at {count(cancelling.rows_done)} rows; it cannot be resumed (start a new one to send the rest). The rows
            already enqueued are still delivered.
          </p>
          <ErrorNote error={act.error} title="Not cancelled" />
        </Confirm>
      )}
    </section>
  );
}
