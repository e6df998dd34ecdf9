// The project's capture: the Debezium connector that reads its database's changes into the outbox,
// as Kafka Connect reports it and as the service's connector supervisor handles it (restarts after a
// failure, waiting while the database is away), and the replication slot that keeps what is not
// captured yet. Read when the page opens and every 10 seconds while the page is visible.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { seg } from '../api';
import { href } from '../router';
import type { OutboxState, Project } from '../types';
import { Badge, Failure, Loading, when } from '../ui/feedback';
import { useResource } from '../ui/use-resource';

const REFRESH_MS = 10_000;

type Tone = 'ok' | 'warn' | 'bad' | 'muted';

interface Verdict {
  tone: Tone;
  /** the badge: one or two words */
  label: string;
  /** the state in a sentence */
  text: ComponentChildren;
  /** needs the owner's (or operator's) attention: shown in the warning style and announced */
  attention: boolean;
}

/** 1536 → "1.5 kB": powers of 1024 with the units PostgreSQL and this service's settings use. */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const v = Math.max(0, n);
  if (v < 1024) return `${Math.round(v)} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let x = v / 1024;
  let i = 0;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return `${x >= 100 ? Math.round(x) : x.toFixed(1)} ${units[i]}`;
}

export function formatLag(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '—';
  if (s < 1) return 'under a second';
  const text = `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 120) return text;
  const min = Math.round(s / 60);
  return `${text} (about ${min < 120 ? `${min} min` : `${Math.round(min / 60)} h`})`;
}

/** A Java stack trace's most telling line: its root cause ("Caused by: ..."), else its first line. */
export function failureSummary(trace: string): string {
  const lines = trace.split('\n').map((l) => l.trim()).filter(Boolean);
  const causes = lines.filter((l) => l.startsWith('Caused by:'));
  const line = (causes.length ? causes[causes.length - 1].replace(/^Caused by:\s*/, '') : lines[0]) ?? trace;
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

const walStatusText: Record<string, { tone: Tone; text: string; attention: boolean }> = {
  extended: {
    tone: 'muted',
    text: 'The slot keeps more WAL than max_wal_size, still within what the database allows a slot (max_slot_wal_keep_size). Nothing is lost.',
    attention: false,
  },
  unreserved: {
    tone: 'warn',
    text: 'The slot keeps more WAL than the database allows a slot (max_slot_wal_keep_size): unless the connector catches up, the next checkpoint removes WAL it has not read, and those changes are lost to capture.',
    attention: true,
  },
  lost: {
    tone: 'bad',
    text: 'WAL the connector had not read yet was removed (max_slot_wal_keep_size): changes made before are lost to capture. The operator starts capture again from now with npm run admin -- recapture.',
    attention: true,
  },
  missing: {
    tone: 'warn',
    text: 'The replication slot does not exist in the database: the connector creates it again when it starts, capturing changes from then on.',
    attention: false,
  },
};

function describe(o: OutboxState): Verdict {
  const c = o.connector!;
  const liveRunning = c.state === 'RUNNING' && c.tasks.length > 0 && c.tasks.every((t) => t.state === 'RUNNING');
  const liveFailed = c.state === 'FAILED' || c.tasks.some((t) => t.state === 'FAILED');
  const next = c.next_restart_at ? <>, next attempt at {when(c.next_restart_at)}</> : null;
  switch (c.supervised_state) {
    case 'waiting_for_database':
      return {
        tone: 'warn',
        label: 'Waiting',
        text: (
          <>
            <strong>Waiting for the database to accept connections.</strong> The connector failed when the project's database stopped accepting
            them; the service restarts it as soon as the database does. Changes committed meanwhile are kept by the replication slot and captured
            then.
          </>
        ),
        attention: true,
      };
    case 'failing':
      return {
        tone: 'bad',
        label: 'Failing',
        text: (
          <>
            <strong>Keeps failing: {c.last_failure ? failureSummary(c.last_failure) : 'no reason was reported'}</strong>. The service has restarted it{' '}
            {c.restarts} times in a row and keeps trying at a growing interval{next}; once the cause is fixed, the next restart brings it back.
          </>
        ),
        attention: true,
      };
    case 'restarting':
      if (liveRunning) return { tone: 'ok', label: 'Capturing', text: <>Capturing changes again after a restart.</>, attention: false };
      return {
        tone: 'warn',
        label: 'Restarting',
        text: (
          <>
            Restarting after a failure (restart {c.restarts}
            {next}).
          </>
        ),
        attention: false,
      };
    case 'missing':
      return {
        tone: 'warn',
        label: 'Re-registering',
        text: <>The connector was missing from Kafka Connect; the service registers it again from its replication slot, which kept every change.</>,
        attention: false,
      };
    case 'idle':
      return {
        tone: 'muted',
        label: 'Idle',
        text: <>Stopped while the project is idle (no message for a while): it costs nothing meanwhile and resumes at the next write to the database.</>,
        attention: false,
      };
  }
  // running, or not looked at yet by the supervisor: what Kafka Connect says now
  const unchecked = c.supervised_state === null ? ' The connector supervisor (dispatcher role) has not looked at it yet.' : '';
  if (c.state === 'UNKNOWN') return { tone: 'warn', label: 'Unknown', text: <>Kafka Connect does not answer right now; capture resumes when it does.{unchecked}</>, attention: false };
  if (c.state === 'NOT_REGISTERED')
    return { tone: 'warn', label: 'Not registered', text: <>The connector is not registered with Kafka Connect; the service registers it again at its next check.{unchecked}</>, attention: false };
  if (liveFailed)
    return {
      tone: 'warn',
      label: 'Failed',
      text: <>A task of the connector failed just now; the service restarts it at its next check.{unchecked}</>,
      attention: false,
    };
  if (liveRunning) return { tone: 'ok', label: 'Capturing', text: <>Capturing changes.{unchecked}</>, attention: false };
  return { tone: 'muted', label: 'Starting', text: <>Starting (Kafka Connect reports {c.state.toLowerCase()}).{unchecked}</>, attention: false };
}

/** The outbox state, read now and every REFRESH_MS while the page is visible. */
function useOutboxState(project: Project) {
  const res = useResource<OutboxState>(`projects/${seg(project.ref)}/outbox`);
  const { reload } = res;
  useEffect(() => {
    let timer: ReturnType<typeof setInterval> | undefined;
    const sync = () => {
      clearInterval(timer);
      timer = undefined;
      if (document.visibilityState === 'visible') timer = setInterval(reload, REFRESH_MS);
    };
    const onVisibility = () => {
      if (document.visibilityState === 'visible') reload();
      sync();
    };
    sync();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [reload]);
  const [readAt, setReadAt] = useState<Date | null>(null);
  useEffect(() => {
    if (res.data) setReadAt(new Date());
  }, [res.data]);
  return { ...res, readAt };
}

function taskSummary(c: NonNullable<OutboxState['connector']>): string {
  const tasks = c.tasks.map((t) => `task ${t.id} ${t.state.toLowerCase()}`).join(', ');
  if (c.state === 'UNKNOWN') return 'Kafka Connect does not answer';
  if (c.state === 'NOT_REGISTERED') return 'not registered';
  return `${c.state.toLowerCase()}${tasks ? `; ${tasks}` : ''}`;
}

/** The Capture panel of the overview (nothing while the project has no outbox). */
export function CapturePanel({ project }: { project: Project }) {
  const o = useOutboxState(project);
  const data = o.data;
  const verdict = data?.outbox_enabled && data.connector ? describe(data) : null;
  const wal = data?.slot?.wal_status && data.slot.wal_status !== 'reserved' ? (walStatusText[data.slot.wal_status] ?? { tone: 'warn' as Tone, text: 'PostgreSQL reports this WAL status for the slot.', attention: false }) : null;
  const trouble = verdict?.tone === 'bad' || wal?.tone === 'bad';
  const attention = !!verdict?.attention || !!wal?.attention;
  const c = data?.connector;
  const slot = data?.slot;
  // the supervisor records the connector at once, the slot at its next read of the slots
  const slotUnread = !slot || (slot.retained_wal_bytes === null && slot.wal_status === null);
  // Nothing to show for a project without an outbox (the overview says so); it is read anyway, as
  // a webhook created since the page loaded the project has enabled it.
  if (data ? !data.outbox_enabled : !project.outbox_enabled) return null;

  return (
    <section class={`panel capture${attention ? (trouble ? ' trouble' : ' attention') : ''}`} aria-labelledby="capture-title" data-testid="capture">
      <h2 id="capture-title">Capture</h2>
      <p class="hint">
        Changes in the project's database reach the outbox through a Debezium connector reading its replication slot. The service watches the connector
        and restarts it when it fails.
      </p>
      {o.loading && !data && <Loading what="Loading the capture state" />}
      {o.error && !data && <Failure error={o.error} />}
      {verdict && c && (
        <>
          <p class="capture-state" role={verdict.attention ? 'alert' : 'status'} data-testid="capture-state">
            <Badge tone={verdict.tone}>{verdict.label}</Badge> {verdict.text}
          </p>
          <dl class="facts">
            <dt>Connector</dt>
            <dd>
              <span class="mono wrap">{c.name}</span> <span class="dim small">(Kafka Connect: {taskSummary(c)})</span>
            </dd>
            <dt>Restarts by the service</dt>
            <dd data-testid="capture-restarts">
              {c.total_restarts}
              {c.restarts > 0 && c.restarts !== c.total_restarts ? ` (${c.restarts} in a row)` : ''}
            </dd>
            <dt>Last restart</dt>
            <dd data-testid="capture-last-restart">{c.last_restart_at ? when(c.last_restart_at) : 'never'}</dd>
            {slotUnread && (
              <>
                <dt>Replication slot</dt>
                <dd data-testid="capture-retained">not read yet: the service reads it about every half minute</dd>
              </>
            )}
            {slot && !slotUnread && (
              <>
                <dt>Retained WAL</dt>
                <dd data-testid="capture-retained">
                  {formatBytes(slot.retained_wal_bytes)}{' '}
                  <span class="dim small">kept by the replication slot until the connector confirms it has read it</span>
                </dd>
                <dt>Capture lag</dt>
                <dd data-testid="capture-lag">{formatLag(slot.capture_lag_seconds)}</dd>
              </>
            )}
            {wal && slot && (
              <>
                <dt>WAL status</dt>
                <dd data-testid="capture-wal-status">
                  <Badge tone={wal.tone}>{slot.wal_status}</Badge> {wal.text}
                  {slot.wal_status === 'unreserved' && slot.safe_wal_bytes !== null && <> Room left before that: {formatBytes(slot.safe_wal_bytes)}.</>}
                </dd>
              </>
            )}
            <dt>Checked by the service</dt>
            <dd>{c.checked_at ? when(c.checked_at) : 'not yet'}</dd>
          </dl>
          {c.last_failure && c.supervised_state !== 'running' && c.supervised_state !== 'idle' && (
            <details class="capture-failure">
              <summary>Last failure as Kafka Connect reported it</summary>
              <pre class="body">{c.last_failure}</pre>
            </details>
          )}
        </>
      )}
      <div class="toolbar">
        <button type="button" onClick={o.reload} disabled={o.loading}>
          Refresh capture state
        </button>
        {o.readAt && <span class="dim small">Read at {o.readAt.toLocaleTimeString()}; refreshed every 10 seconds while this page is open.</span>}
      </div>
    </section>
  );
}

/** One line above the deliveries: is capture working, with a link to the overview's panel. */
export function CaptureLine({ project }: { project: Project }) {
  const o = useOutboxState(project);
  const data = o.data;
  if (!data?.outbox_enabled || !data.connector) return null;
  const verdict = describe(data);
  const wal = data.slot?.wal_status ? walStatusText[data.slot.wal_status] : undefined;
  const attention = verdict.attention || !!wal?.attention;
  const trouble = verdict.tone === 'bad' || wal?.tone === 'bad';
  return (
    <div class={`capture-line${attention ? (trouble ? ' trouble' : ' attention') : ''}`} data-testid="capture-line">
      <p role={attention ? 'alert' : 'status'}>
        <strong>Capture:</strong> <Badge tone={verdict.tone}>{verdict.label}</Badge> {verdict.text}
        {wal?.attention && (
          <>
            {' '}
            <Badge tone={wal.tone}>WAL {data.slot!.wal_status}</Badge> {wal.text}
          </>
        )}{' '}
        <a href={href(project.ref, 'overview')}>Capture details</a>
      </p>
    </div>
  );
}
