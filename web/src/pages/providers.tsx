// SSO providers: the list, and the way into creating one or opening its settings.
import { useState } from 'preact/hooks';
import { seg } from '../api';
import { href, navigate } from '../router';
import type { SectionProps } from './section';
import type { Provider } from '../types';
import { Badge, Empty, Failure, Loading, PlanLimit } from '../ui/feedback';
import { Dialog } from '../ui/dialog';
import { useResource } from '../ui/use-resource';
import { ProviderCreate } from './provider-create';
import { ProviderView } from './provider-view';
import { SetupLinks } from './setup-links';

export function Providers({ project, id }: SectionProps) {
  if (!project.features.includes('sso')) return <PlanLimit feature="sso" plan={project.plan} projectRef={project.ref} />;
  if (id) return <ProviderView project={project} id={id} />;
  return <ProviderList project={project} />;
}

function ProviderList({ project }: SectionProps) {
  const base = `projects/${seg(project.ref)}/auth/providers/sso`;
  const list = useResource<{ items: Provider[] }>(base);
  const items = list.data?.items;
  const [creating, setCreating] = useState(false);
  return (
    <>
      <p class="lead">
        Bind your company's identity provider (OIDC or SAML) to email domains. A user whose email is in a provider's domains (or a subdomain)
        signs in through it; the most specific domain wins.
      </p>
      <div class="toolbar">
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          Add provider
        </button>
      </div>
      {list.loading && !list.data && <Loading what="Loading providers" />}
      {list.error && <Failure error={list.error} plan={project.plan} projectRef={project.ref} />}
      {items?.length === 0 && <Empty>No SSO providers yet. Add one: you will get the URLs to give your IdP administrator.</Empty>}
      {!!items?.length && (
        <table>
          <caption class="sr-only">SSO providers</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Kind</th>
              <th scope="col">Domains</th>
              <th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {items.map((p) => (
              <tr key={p.id}>
                <td>
                  <a href={href(project.ref, 'sso', p.id)}>{p.name}</a>
                </td>
                <td>{p.kind.toUpperCase()}</td>
                <td class="mono wrap">{p.domains.join(', ')}</td>
                <td>{p.enabled ? <Badge tone="ok">enabled</Badge> : p.draft ? <Badge tone="warn">draft (setup link)</Badge> : <Badge tone="muted">disabled</Badge>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <SetupLinks project={project} />
      {creating && (
        <Dialog title="Add an SSO provider" onClose={() => setCreating(false)}>
          <ProviderCreate
            base={base}
            onCancel={() => setCreating(false)}
            onCreated={(p) => {
              setCreating(false);
              navigate(href(project.ref, 'sso', p.id));
            }}
          />
        </Dialog>
      )}
    </>
  );
}
