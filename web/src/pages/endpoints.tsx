// Endpoint protection as the owner sees it: a webhook's circuit breaker (closed, open with its
// messages held, or probing), the banner of a webhook the service disabled because its endpoint
// kept failing (with Enable, then the offer to replay what ended while it was disabled), and the
// project's endpoints that need attention (GET /v1/projects/{ref}/outbox/endpoints). Everything
// shown here may come from a customer's endpoint (last_error): it is rendered as text only.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, seg } from '../api';
import type { Circuit, Project, ReplayOffer, ReplayResult, Webhook } from '../types';
import { Badge, ErrorNote, Failure, when } from '../ui/feedback';
import { useAction, useResource } from '../ui/use-resource';
import { ReplayOutcome } from './replay';

const REFRESH_MS = 10_000;

/** Calls fn every REFRESH_MS while the tab is visible, and at once when it is shown again. */
export function useVisibleRefresh(fn: () => void) {
  useEffect(() => {
    let timer: ReturnType<typeof setInterval> | undefined;
    const start = () => {
      if (timer) clearInterval(timer);
      timer = document.visibilityState === 'visible' ? setInterval(fn, REFRESH_MS) : undefined;
    };
    const onVisibility = () => {
      start();
      if (document.visibilityState === 'visible') fn();
    };
    start();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      if (timer) clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [fn]);
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The circuit's state as a badge: nothing for a closed one. */
export function CircuitBadge({ circuit }: { circuit?: Circuit }) {
  if (circuit?.state === 'open') return <Badge tone="bad">circuit open</Badge>;
  if (circuit?.state === 'half_open') return <Badge tone="warn">probing</Badge>;
  return null;
}

/** A webhook's circuit and rate limit, for its row in the list. */
export function EndpointCell({ hook }: { hook: Webhook }) {
  const c = hook.circuit;
  return (
    <div class="endpoint-cell">
      {!hook.enabled ? (
        <span class="dim small">nothing is sent while disabled</span>
      ) : c?.state === 'open' ? (
        <>
          <CircuitBadge circuit={c} />
          <div class="small">
            Nothing is sent; next probe at {when(c.next_probe_at)}.
            <br />
            {plural(c.held_messages, 'message')} held.
            {c.failing_since && (
              <>
                <br />
                Failing since {when(c.failing_since)}.
              </>
            )}
            {c.last_error && (
              <>
                <br />
                Last error: <code class="wrap">{c.last_error}</code>
              </>
            )}
          </div>
        </>
      ) : c?.state === 'half_open' ? (
        <>
          <CircuitBadge circuit={c} />
          <div class="small">
            One request is testing the endpoint; {plural(c.held_messages, 'message')} held.
          </div>
        </>
      ) : (
        <span class="dim small">
          sending
          {c && c.failures_in_window > 0 && ` · ${c.failures_in_window} of ${plural(c.attempts_in_window, 'recent attempt')} failed`}
          {c && c.held_messages > 0 && ` · ${plural(c.held_messages, 'message')} waiting`}
        </span>
      )}
      {hook.rate_limit ? <div class="small">Rate limit: {hook.rate_limit} requests/second</div> : null}
      {hook.max_in_flight ? <div class="small">At most {plural(hook.max_in_flight, 'request')} in flight per dispatcher</div> : null}
    </div>
  );
}

/** A webhook the service disabled because its endpoint failed every attempt for too long. */
export function DisabledBanner({ hook, busy, onEnable }: { hook: Webhook; busy: boolean; onEnable: () => void }) {
  // the service forgets the circuit when it disables the webhook and keeps when it began failing
  const since = hook.disabled_failing_since ?? hook.disabled_at;
  return (
    <div class="notice warning disabled-banner" role="alert" aria-label={`${hook.name} disabled by the service`}>
      <p>
        <strong>{hook.name}</strong>: Disabled by the service on {when(hook.disabled_at)}: its endpoint failed every attempt since {when(since)}.
        {hook.circuit?.last_error && (
          <>
            {' '}
            Last error: <code class="wrap">{hook.circuit.last_error}</code>.
          </>
        )}
      </p>
      <p class="small">
        Changes made meanwhile end <em>dead</em> without a request
        {hook.replay_offer ? ` (${plural(hook.replay_offer.deliveries, 'delivery', 'deliveries')} so far)` : ''}; once the endpoint is fixed,
        enable the webhook and replay them.
      </p>
      <div class="actions start">
        <button type="button" class="primary" disabled={busy} onClick={onEnable} aria-label={`Enable ${hook.name}`}>
          {busy ? 'Enabling…' : 'Enable'}
        </button>
      </div>
    </div>
  );
}

/** After enabling: replay what ended dead while the webhook was disabled (POST .../outbox/replay). */
export function ReplayOfferBox({ project, name, offer, onClose }: { project: Project; name: string; offer: ReplayOffer; onClose: () => void }) {
  const [result, setResult] = useState<ReplayResult | null>(null);
  const replay = useAction(async () => setResult(await api<ReplayResult>('POST', `projects/${seg(project.ref)}/outbox/replay`, offer.request)));
  const n = offer.deliveries;
  return (
    <section class="notice replay-offer" aria-label={`Replay offer for ${name}`}>
      {result ? (
        <ReplayOutcome result={result} />
      ) : (
        <>
          <p>
            <strong>{name}</strong> sends again. {plural(n, 'delivery', 'deliveries')} ended <em>dead</em> while it was disabled (changes since{' '}
            {when(offer.request.since)}); replaying sends them now, each as a new run.
          </p>
          <ErrorNote error={replay.error} title="Not replayed" />
        </>
      )}
      <div class="actions start">
        {!result && (
          <button type="button" class="primary" disabled={replay.busy} onClick={() => void replay.run()}>
            {replay.busy ? 'Replaying…' : `Replay ${plural(n, 'delivery', 'deliveries')} that ended while it was disabled`}
          </button>
        )}
        <button type="button" onClick={onClose}>
          {result ? 'Close' : 'Not now'}
        </button>
      </div>
    </section>
  );
}

/** webhook:<id> → the webhook's name (when known), host:<name> → the host. */
function endpointLabel(c: Circuit, names?: Map<string, string>) {
  if (c.endpoint.startsWith('host:')) {
    return (
      <>
        <span class="mono">{c.endpoint.slice(5)}</span> <span class="dim small">base.http_request host</span>
      </>
    );
  }
  const id = c.webhook_id ?? c.endpoint.replace(/^webhook:/, '');
  const name = names?.get(id);
  return name ? (
    <>
      <span>{name}</span> <span class="dim small">webhook</span>
    </>
  ) : (
    <>
      <span class="mono">{id}</span> <span class="dim small">webhook</span>
    </>
  );
}

/** The project's endpoints with a circuit not closed, recent failures or held messages. */
export function EndpointsPanel({ project, names, tick = 0, quietWhenNone }: { project: Project; names?: Map<string, string>; tick?: number; quietWhenNone?: boolean }) {
  const list = useResource<Circuit[]>(`projects/${seg(project.ref)}/outbox/endpoints`);
  // outside the webhooks page, the webhooks' names are read here (only when a webhook is listed)
  const needNames = !names && !!list.data?.some((c) => c.endpoint.startsWith('webhook:'));
  const hooks = useResource<Webhook[]>(needNames ? `projects/${seg(project.ref)}/webhooks` : null);
  const known = useMemo(() => names ?? new Map((hooks.data ?? []).map((h) => [h.id, h.name])), [names, hooks.data]);
  useEffect(() => {
    if (tick) list.reload();
  }, [tick]);
  useVisibleRefresh(list.reload);
  if (quietWhenNone && !list.data?.length) return null;
  return (
    <section class="panel endpoints" aria-labelledby="endpoints-title">
      <h3 id="endpoints-title">Endpoints needing attention</h3>
      {list.error && <Failure error={list.error} />}
      {list.data?.length === 0 && <p class="dim">None: every circuit is closed, with no recent failures and nothing held.</p>}
      {!!list.data?.length && (
        <table>
          <caption class="sr-only">Endpoints needing attention</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col">State</th>
              <th scope="col">Held messages</th>
              <th scope="col">Recent failures</th>
              <th scope="col">Last error</th>
              <th scope="col">Failing since</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((c) => (
              <tr key={c.endpoint}>
                <td>{endpointLabel(c, known)}</td>
                <td>
                  {c.state === 'closed' ? <span class="dim">closed</span> : <CircuitBadge circuit={c} />}
                  {c.state === 'open' && <div class="small">next probe {when(c.next_probe_at)}</div>}
                </td>
                <td>{c.held_messages}</td>
                <td>
                  {c.failures_in_window} of {c.attempts_in_window}
                  {c.failed_probes > 0 && <div class="small dim">{plural(c.failed_probes, 'failed probe')}</div>}
                </td>
                <td class="wrap">{c.last_error ? <code>{c.last_error}</code> : '—'}</td>
                <td>{when(c.failing_since)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p class="hint">
        While a circuit is open nothing is sent to that endpoint and its messages are held without spending attempts; a probe tests it after a
        cool-down, and it closes again on the first success. Read every 10 seconds.
      </p>
    </section>
  );
}
