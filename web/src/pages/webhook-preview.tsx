// What a webhook sends, before it sends it (docs/delivery.md, "Preview and test events"): an
// optional sample row change (type, record, old_record as JSON; empty: the table's latest row),
// "Preview" (POST .../webhooks/{id}/preview: whether it would fire and why not, and the request with
// its columns and template applied, not sent) and "Send test event" (POST .../webhooks/{id}/test:
// the sample as a real message, marked test, linked to its delivery). Everything shown comes from
// the customer's table or template: rendered as text only.
import { useState } from 'preact/hooks';
import { api, ApiFailure, seg } from '../api';
import { href } from '../router';
import type { Project, TestEvent, Webhook, WebhookPreview } from '../types';
import { Badge, ErrorNote, Notice } from '../ui/feedback';
import { Select, TextArea } from '../ui/form';
import { useAction } from '../ui/use-resource';

type Op = 'INSERT' | 'UPDATE' | 'DELETE';

/** One JSON object typed in a sample field, or undefined when the field is empty. */
function rowOf(text: string, name: string): Record<string, unknown> | undefined {
  if (!text.trim()) return undefined;
  let row: unknown;
  try {
    row = JSON.parse(text);
  } catch (e) {
    throw new ApiFailure(0, 'invalid_sample', `${name} is not JSON: ${(e as Error).message}`);
  }
  if (row === null || typeof row !== 'object' || Array.isArray(row)) throw new ApiFailure(0, 'invalid_sample', `${name} is a JSON object of column values, e.g. {"id": 7}.`);
  return row as Record<string, unknown>;
}

const size = (n: number) => (n < 1024 ? `${n} bytes` : `${(n / 1024).toFixed(1)} KB (${n} bytes)`);

export function WebhookPreviewPanel({ project, hook }: { project: Project; hook: Webhook }) {
  const path = `projects/${seg(project.ref)}/webhooks/${seg(hook.id)}`;
  const [type, setType] = useState<Op>('INSERT');
  const [recordText, setRecordText] = useState('');
  const [oldText, setOldText] = useState('');
  const [preview, setPreview] = useState<WebhookPreview | null>(null);
  const [sent, setSent] = useState<TestEvent | null>(null);

  /** The sample as the API takes it: the type, and the rows typed for it (none: the latest row). */
  const sample = () => {
    const body: { type: Op; record?: Record<string, unknown>; old_record?: Record<string, unknown> } = { type };
    const record = type === 'DELETE' ? undefined : rowOf(recordText, 'The row (record)');
    const old = type === 'INSERT' ? undefined : rowOf(oldText, 'The row before (old_record)');
    if (record) body.record = record;
    if (old) body.old_record = old;
    return body;
  };
  const run = useAction(async () => {
    setSent(null);
    setPreview(await api<WebhookPreview>('POST', `${path}/preview`, sample()));
  });
  const test = useAction(async () => {
    setSent(await api<TestEvent>('POST', `${path}/test`, sample()));
  });

  return (
    <section class="panel preview" aria-labelledby="preview-title">
      <h2 id="preview-title">Preview and test event</h2>
      <p class="hint">
        See the request a change would make, with the columns and body template applied, without sending it; or send it as a test event. Leave the
        rows empty to use the table's latest row.
      </p>
      <div class="grid2">
        <Select
          label="Event type"
          value={type}
          onChange={setType}
          options={[
            ['INSERT', 'INSERT'],
            ['UPDATE', 'UPDATE'],
            ['DELETE', 'DELETE'],
          ]}
        />
        <div />
        {type !== 'DELETE' && (
          <TextArea
            label="Sample row (record)"
            value={recordText}
            onInput={setRecordText}
            mono
            rows={4}
            placeholder={'{"id": 7, "status": "paid"}'}
            hint="Column values as JSON, typed by the table; columns left out are null. Empty: the latest row."
          />
        )}
        {type !== 'INSERT' && (
          <TextArea
            label="Row before (old_record)"
            value={oldText}
            onInput={setOldText}
            mono
            rows={4}
            placeholder={'{"id": 7, "status": "open"}'}
            hint={type === 'UPDATE' ? 'Empty: the same as the row.' : 'The deleted row. Empty: the latest row.'}
          />
        )}
      </div>
      <div class="actions start">
        <button type="button" class="primary" disabled={run.busy} onClick={() => void run.run()}>
          {run.busy ? 'Previewing…' : 'Preview'}
        </button>
        <button type="button" disabled={test.busy || !hook.enabled} onClick={() => void test.run()} title={hook.enabled ? undefined : 'The webhook is disabled'}>
          {test.busy ? 'Sending…' : 'Send test event'}
        </button>
      </div>
      <ErrorNote error={run.error} title="No preview" />
      <ErrorNote error={test.error} title="Not sent" />
      {sent && (
        <Notice kind="success">
          Test event queued: it goes through the outbox like any change, marked <em>test</em>.{' '}
          <a href={href(project.ref, 'deliveries', sent.message_id)} aria-label={`Test delivery ${sent.message_id}`}>
            Open its delivery <span class="mono">{sent.message_id}</span>
          </a>
        </Notice>
      )}
      {preview && <PreviewResult preview={preview} />}
    </section>
  );
}

function PreviewResult({ preview }: { preview: WebhookPreview }) {
  const { request: r } = preview;
  return (
    <div class="preview-result" data-testid="preview-result">
      <p>
        {preview.fires ? <Badge tone="ok">would send</Badge> : <Badge tone="warn">would not send</Badge>}{' '}
        <span class="dim">
          {preview.sample.type} of {preview.sample.source === 'latest_row' ? "the table's latest row" : 'the sample row'}
        </span>
      </p>
      {preview.not_sent_because.length > 0 && (
        <ul class="not-sent" aria-label="Not sent because">
          {preview.not_sent_because.map((why) => (
            <li key={why}>{why}</li>
          ))}
        </ul>
      )}
      <dl class="facts">
        <dt>Request</dt>
        <dd class="mono wrap">
          {r.method} {r.url}
        </dd>
        <dt>Size</dt>
        <dd>{size(r.size_bytes)}</dd>
        <dt>Headers</dt>
        <dd>
          <ul class="headers mono">
            {Object.entries(r.headers).map(([k, v]) => (
              <li key={k} class="wrap">
                {k}: {v}
              </li>
            ))}
          </ul>
          <span class="small dim">webhook-id, webhook-timestamp and webhook-signature are added when it is sent.</span>
        </dd>
      </dl>
      <h3>Body</h3>
      <pre class="body" aria-label="Request body">
        {JSON.stringify(r.body, null, 2)}
      </pre>
    </div>
  );
}
