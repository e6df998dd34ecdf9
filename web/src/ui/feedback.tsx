// What every view shows while it waits, when it has nothing, and when the API says no.
import type { ComponentChildren } from 'preact';
import type { ApiFailure } from '../api';

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p class="loading" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" /> {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

const planFeature: Record<string, { name: string; plans: string }> = {
  sso: { name: 'Single sign-on (SSO)', plans: 'enterprise' },
  custom_smtp: { name: 'Custom SMTP', plans: 'pro or enterprise' },
};

/** A plan limit is not an error the owner made: explain it instead of showing a broken form. */
export function PlanLimit({ feature, plan, message, projectRef }: { feature: 'sso' | 'custom_smtp'; plan?: string; message?: string; projectRef?: string }) {
  const f = planFeature[feature];
  return (
    <section class="plan-limit" aria-labelledby="plan-limit-title">
      <h3 id="plan-limit-title">{f.name} is not part of {plan ? `the ${plan} plan` : "this project's plan"}</h3>
      <p>{message ?? `It is included in the ${f.plans} plan.`}</p>
      <p>
        Plans are changed by the operator of this service, for example with{' '}
        <code>
          npm run admin -- set-plan --ref {projectRef ?? '<ref>'} --plan {feature === 'sso' ? 'enterprise' : 'pro'}
        </code>. Once the plan
        includes it, this page shows the settings.
      </p>
    </section>
  );
}

export function ErrorNote({ error, title }: { error?: ApiFailure; title?: string }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <strong>{title ?? 'The service refused this'}:</strong> {error.message} <code class="code">{error.code}</code>
    </div>
  );
}

/** Shows an error, unless it is a plan limit, which gets its own explanation. */
export function Failure({ error, plan, projectRef }: { error: ApiFailure; plan?: string; projectRef?: string }) {
  if (error.code === 'feature_not_in_plan') {
    const feature = /smtp/i.test(error.message) ? 'custom_smtp' : 'sso';
    return <PlanLimit feature={feature} plan={plan} message={error.message} projectRef={projectRef} />;
  }
  return <ErrorNote error={error} title="Could not load this" />;
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'success' | 'warning'; children: ComponentChildren }) {
  return (
    <div class={`notice ${kind}`} role={kind === 'warning' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}

export function Badge({ tone, children }: { tone: 'ok' | 'bad' | 'warn' | 'muted'; children: ComponentChildren }) {
  return <span class={`badge ${tone}`}>{children}</span>;
}

export function when(iso?: string | null): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}
