// Create or edit a webhook. Edits send only the fields that changed (PATCH is partial).
import { useState } from 'preact/hooks';
import { api, ApiFailure, seg } from '../api';
import type { Webhook } from '../types';
import { ErrorNote } from '../ui/feedback';
import { Check, Field, Select, TextArea, formatHeaders, parseHeaders } from '../ui/form';
import { useAction } from '../ui/use-resource';

const EVENTS = ['INSERT', 'UPDATE', 'DELETE'] as const;

export function WebhookForm({ base, hook, onSaved, onCancel }: { base: string; hook?: Webhook; onSaved: (w: Webhook) => void; onCancel: () => void }) {
  const [name, setName] = useState(hook?.name ?? '');
  const [table, setTable] = useState(hook?.table ?? 'public.');
  const [events, setEvents] = useState<string[]>(hook?.events ?? ['INSERT']);
  const [columns, setColumns] = useState((hook?.update_columns ?? []).join(', '));
  const [url, setUrl] = useState(hook?.url ?? 'https://');
  const [headers, setHeaders] = useState(formatHeaders(hook?.headers));
  const [timeout, setTimeoutMs] = useState(hook?.timeout_ms ? String(hook.timeout_ms) : '');
  const [rate, setRate] = useState(hook?.rate_limit ? String(hook.rate_limit) : '');
  const [maxInFlight, setMaxInFlight] = useState(hook?.max_in_flight ? String(hook.max_in_flight) : '');
  const [enabled, setEnabled] = useState(hook?.enabled ?? true);
  // '' on create: the service's default (row order when the table has a primary key)
  const [ordering, setOrdering] = useState<'' | Webhook['ordering']>(hook?.ordering ?? '');
  const [scheme, setScheme] = useState<'v1' | 'v1a'>(hook?.signature_scheme ?? 'v1');
  const [filterText, setFilterText] = useState(hook?.filter ? JSON.stringify(hook.filter, null, 2) : '');
  // payload shaping: the columns the row carries ('' = all) and the body template ('' = the row-change payload)
  const [sentColumns, setSentColumns] = useState((hook?.columns ?? []).join(', '));
  const [templateText, setTemplateText] = useState(hook?.template ? JSON.stringify(hook.template, null, 2) : '');

  const save = useAction(async () => {
    let parsedHeaders: Record<string, string>;
    try {
      parsedHeaders = parseHeaders(headers);
    } catch (e) {
      throw new ApiFailure(0, 'invalid_headers', (e as Error).message);
    }
    if (events.length === 0) throw new ApiFailure(0, 'no_events', 'Choose at least one event.');
    const rateText = rate.trim();
    if (rateText && !(/^\d+$/.test(rateText) && Number(rateText) >= 1 && Number(rateText) <= 10_000)) {
      throw new ApiFailure(0, 'invalid_rate_limit', 'The rate limit is a whole number of requests per second from 1 to 10000, or empty for no limit.');
    }
    const inFlightText = maxInFlight.trim();
    if (inFlightText && !(/^\d+$/.test(inFlightText) && Number(inFlightText) >= 1 && Number(inFlightText) <= 1000)) {
      throw new ApiFailure(0, 'invalid_max_in_flight', 'The maximum in flight is a whole number of requests from 1 to 1000, or empty for the adaptive window alone.');
    }
    // only UPDATE can be filtered by column; an empty field means every UPDATE fires
    const listed = events.includes('UPDATE') ? [...new Set(columns.split(',').map((c) => c.trim()).filter(Boolean))] : [];
    const update_columns = listed.length ? listed : null;
    // the row filter: JSON as written (the service checks it against the table); empty: every change
    let filter: Record<string, unknown> | null = null;
    if (filterText.trim()) {
      try {
        filter = JSON.parse(filterText);
      } catch (e) {
        throw new ApiFailure(0, 'invalid_filter', `The row filter is not JSON: ${(e as Error).message}`);
      }
      if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) throw new ApiFailure(0, 'invalid_filter', 'The row filter is a JSON object, e.g. {"status": "paid"}; empty for every change.');
    }
    const sent = [...new Set(sentColumns.split(',').map((c) => c.trim()).filter(Boolean))];
    const columnsSent = sent.length ? sent : null;
    const template = parseTemplate(templateText);
    const body: Record<string, unknown> = { name: name.trim() || table.trim(), table: table.trim(), events, update_columns, url: url.trim(), headers: parsedHeaders, enabled, signature_scheme: scheme };
    if (filter || hook) body.filter = filter;
    if (columnsSent || hook) body.columns = columnsSent;
    if (template || hook) body.template = template;
    if (ordering) body.ordering = ordering;
    if (timeout) body.timeout_ms = Number(timeout);
    // empty: no limit (null clears one); a new webhook without one sends nothing
    if (rateText || hook) body.rate_limit = rateText ? Number(rateText) : null;
    if (inFlightText || hook) body.max_in_flight = inFlightText ? Number(inFlightText) : null;
    if (!hook) return onSaved(await api<Webhook>('POST', base, body));
    const changed = Object.fromEntries(
      Object.entries(body).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify((hook as unknown as Record<string, unknown>)[k])),
    );
    onSaved(Object.keys(changed).length ? await api<Webhook>('PATCH', `${base}/${seg(hook.id)}`, changed) : hook);
  });

  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        void save.run();
      }}
    >
      <Field label="Name" value={name} onInput={setName} placeholder="the table's name" />
      <Field label="Table" value={table} onInput={setTable} required mono hint="schema.table, in schema public or api; it must exist in the project database." />
      <fieldset>
        <legend>Events</legend>
        {EVENTS.map((ev) => (
          <label key={ev} class="inline">
            <input
              type="checkbox"
              name="events"
              value={ev}
              checked={events.includes(ev)}
              onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))}
            />{' '}
            {ev}
          </label>
        ))}
      </fieldset>
      {events.includes('UPDATE') && (
        <Field
          label="Only when these columns change"
          value={columns}
          onInput={setColumns}
          mono
          placeholder="every update"
          hint="Comma-separated column names (case-sensitive). An UPDATE then sends a request only if one of them changed value; empty: every UPDATE."
        />
      )}
      <TextArea
        label="Row filter"
        value={filterText}
        onInput={setFilterText}
        mono
        rows={3}
        placeholder={'{"status": "paid", "amount": {"gt": 100}}'}
        hint="JSON: only changes whose row matches are sent; the others enqueue nothing. Operators eq, ne, gt, gte, lt, lte, in, not_in, null; old.column for the row before an UPDATE; and, or, not. Empty: every change."
      />
      <Field
        label="URL"
        type="url"
        value={url}
        onInput={setUrl}
        required
        mono
        hint="http(s) only. Private, loopback and metadata addresses are refused."
      />
      <TextArea
        label="Headers"
        value={headers}
        onInput={setHeaders}
        mono
        rows={3}
        placeholder={'Authorization: Bearer {{secret:BILLING_TOKEN}}'}
        hint="One “Name: value” per line. webhook-id, webhook-timestamp and webhook-signature are set by the service."
      />
      <Field
        label="Columns sent"
        value={sentColumns}
        onInput={setSentColumns}
        mono
        placeholder="every column"
        hint="Comma-separated column names (case-sensitive): record and old_record carry only these; the other columns never leave the database. Empty: every column."
      />
      <TextArea
        label="Body template"
        value={templateText}
        onInput={setTemplateText}
        mono
        rows={5}
        placeholder={'{"text": "Order {{record.id}} is {{record.status}}", "amount": "{{record.amount}}"}'}
        hint={
          <>
            JSON object or array sent as the request body, with placeholders filled at send time: <code>{'{{type}}'}</code>, <code>{'{{table}}'}</code>,{' '}
            <code>{'{{occurred_at}}'}</code>, <code>{'{{record.column}}'}</code>, <code>{'{{old_record.column}}'}</code>, <code>{'{{payload}}'}</code>,{' '}
            <code>{'{{secret:NAME}}'}</code>…. A string that is one placeholder becomes its value (a number stays a number). Empty: the row-change
            payload.
          </>
        }
      />
      <Field label="Timeout (ms)" type="number" value={timeout} onInput={setTimeoutMs} min={1} placeholder="10000" />
      <Field
        label="Rate limit (requests/second)"
        type="number"
        value={rate}
        onInput={setRate}
        min={1}
        max={10000}
        placeholder="no limit"
        hint="At most this many requests per second to the URL, across all dispatchers; changes beyond it wait their turn without spending an attempt. Empty: no limit."
      />
      <Field
        label="Max requests in flight"
        type="number"
        value={maxInFlight}
        onInput={setMaxInFlight}
        min={1}
        max={1000}
        placeholder="adaptive"
        hint="At most this many requests at once to the URL, per dispatcher process. The service already starts every endpoint with a few and sends more while it answers (slow start); this caps it. Empty: adaptive only."
      />
      <Select
        label="Ordering"
        value={ordering}
        onChange={setOrdering}
        options={[
          ...(hook ? [] : [['', 'Default: row order if the table has a primary key, else none'] as ['', string]]),
          ['row', 'Row order'],
          ['none', 'None'],
        ]}
        hint={
          ordering === 'none'
            ? 'Changes are sent as they come, in parallel: two changes of one row may arrive out of order.'
            : 'The changes of one row are sent in commit order, each after the previous one has a final outcome (needs a primary key).'
        }
      />
      <Select
        label="Signature"
        value={scheme}
        onChange={setScheme}
        options={[
          ['v1', 'v1: shared secret (HMAC-SHA256)'],
          ['v1a', 'v1a: public key (ed25519)'],
        ]}
      />
      <p class="hint">
        {scheme === 'v1a'
          ? 'Receivers verify with the public key alone; the private key never leaves the service.'
          : 'Receivers verify with the signing secret, shown once.'}
        {hook && scheme !== hook.signature_scheme && ' Changing the scheme issues a new key; the current one keeps signing beside it for the grace period.'}
      </p>
      <Check label="Enabled" checked={enabled} onChange={setEnabled} hint="A disabled webhook keeps its settings and secret but sends nothing: its trigger is removed." />
      <ErrorNote error={save.error} title="Not saved" />
      <div class="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" class="primary" disabled={save.busy}>
          {save.busy ? 'Saving…' : hook ? 'Save changes' : 'Create webhook'}
        </button>
      </div>
    </form>
  );
}

/** The body template as written: a JSON object or array, or null when the field is empty. */
function parseTemplate(text: string): Record<string, unknown> | unknown[] | null {
  if (!text.trim()) return null;
  let template: unknown;
  try {
    template = JSON.parse(text);
  } catch (e) {
    throw new ApiFailure(0, 'invalid_template', `The body template is not JSON: ${(e as Error).message}`);
  }
  if (template === null || typeof template !== 'object') {
    throw new ApiFailure(0, 'invalid_template', 'The body template is a JSON object or array, e.g. {"id": "{{record.id}}"}; empty for the row-change payload.');
  }
  return template as Record<string, unknown> | unknown[];
}
