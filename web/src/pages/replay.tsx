// Bulk replay after an outage: re-enqueue the dead (or failed) deliveries matching a filter,
// always behind a confirmation that says what will be sent again.
import { useState } from 'preact/hooks';
import { api } from '../api';
import { Dialog } from '../ui/dialog';
import { ErrorNote, Notice } from '../ui/feedback';
import { Field, Select } from '../ui/form';
import { useAction } from '../ui/use-resource';
import type { ReplayResult } from '../types';

/** What a bulk replay did: how many matched, were queued again, and could not be (off the log). */
export function ReplayOutcome({ result }: { result: ReplayResult }) {
  return (
    <>
      <Notice kind={result.replayed ? 'success' : 'info'}>
        {result.matched === 0
          ? 'No delivery matched these filters: nothing was sent again.'
          : `${result.replayed} of ${result.matched} matching ${result.matched === 1 ? 'delivery was' : 'deliveries were'} queued again as a new run.`}
      </Notice>
      {result.not_found > 0 && (
        <Notice kind="warning">
          {result.not_found} could not be replayed: their messages are no longer on the log (retention has passed).
        </Notice>
      )}
    </>
  );
}

export function Replay({ path, onClose, onDone }: { path: string; onClose: () => void; onDone: () => void }) {
  const [status, setStatus] = useState<'dead' | 'failed' | 'both'>('dead');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [webhookId, setWebhookId] = useState('');
  const [host, setHost] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [result, setResult] = useState<ReplayResult | null>(null);

  const filter = () => {
    const f: Record<string, unknown> = { status: status === 'both' ? ['dead', 'failed'] : status };
    if (from) f.since = new Date(from).toISOString();
    if (to) f.until = new Date(to).toISOString();
    if (webhookId.trim()) f.webhook_id = webhookId.trim();
    if (host.trim()) f.host = host.trim();
    return f;
  };
  const replay = useAction(async () => {
    setResult(await api<ReplayResult>('POST', path, filter()));
    setConfirming(false);
    onDone();
  });

  return (
    <Dialog title="Replay deliveries" onClose={onClose}>
      {result !== null ? (
        <>
          <ReplayOutcome result={result} />
          <div class="actions">
            <button type="button" class="primary" onClick={onClose} autoFocus>
              Close
            </button>
          </div>
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (confirming) void replay.run();
            else setConfirming(true);
          }}
        >
          <p>After an outage, send again every delivery that matches. Each one starts a new run with a fresh retry budget.</p>
          <Select
            label="Deliveries that are"
            value={status}
            onChange={(v) => {
              setStatus(v);
              setConfirming(false);
            }}
            options={[
              ['dead', 'Dead'],
              ['failed', 'Failed (waiting for a retry)'],
              ['both', 'Dead or failed'],
            ]}
          />
          <div class="grid2">
            <Field label="Created from" type="datetime-local" value={from} onInput={(v) => (setFrom(v), setConfirming(false))} />
            <Field label="Created until" type="datetime-local" value={to} onInput={(v) => (setTo(v), setConfirming(false))} />
            <Field label="Webhook id" value={webhookId} onInput={(v) => (setWebhookId(v), setConfirming(false))} mono placeholder="any" />
            <Field label="Target host" value={host} onInput={(v) => (setHost(v), setConfirming(false))} mono placeholder="any" />
          </div>
          {confirming && (
            <Notice kind="warning">
              Every <strong>{status === 'both' ? 'dead or failed' : status}</strong> delivery matching these filters
              {from || to || webhookId || host ? '' : ' (no filter: all of them)'} will be sent again to its target. Press “Replay now” to confirm.
            </Notice>
          )}
          <ErrorNote error={replay.error} title="Not replayed" />
          <div class="actions">
            <button type="button" onClick={onClose}>
              Cancel
            </button>
            <button type="submit" class={confirming ? 'danger' : 'primary'} disabled={replay.busy}>
              {replay.busy ? 'Replaying…' : confirming ? 'Replay now' : 'Review replay'}
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
