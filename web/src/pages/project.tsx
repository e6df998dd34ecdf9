// One project: its navigation and the section the route names.
import { useEffect, useRef } from 'preact/hooks';
import { href, type Route, type Section } from '../router';
import type { Project } from '../types';
import { Failure, Loading } from '../ui/feedback';
import { useResource } from '../ui/use-resource';
import type { SectionProps } from './section';
import { Overview } from './overview';
import { Providers } from './providers';
import { Webhooks } from './webhooks';
import { Secrets } from './secrets';
import { SmtpSettings } from './smtp';
import { Deliveries } from './deliveries';
import { BlockedKeys } from './blocked-keys';
import { Users } from './users';
import { Audit } from './audit';

const labels: Record<Section, string> = {
  overview: 'Overview',
  sso: 'SSO providers',
  webhooks: 'Webhooks',
  secrets: 'Secrets',
  smtp: 'SMTP',
  deliveries: 'Deliveries',
  'blocked-keys': 'Blocked keys',
  users: 'Users',
  audit: 'Audit trail',
};

/** Sections shown indented under the one before them (blocked keys belong to the outbox's deliveries). */
const sub = new Set<Section>(['blocked-keys']);

export function ProjectPage({ route }: { route: Extract<Route, { page: 'project' }> }) {
  const project = useResource<Project>(`projects/${encodeURIComponent(route.ref)}`);
  const heading = useRef<HTMLHeadingElement>(null);
  // Move focus to the section heading on navigation so keyboard and screen-reader users land there.
  useEffect(() => heading.current?.focus(), [route.section, route.id, !!project.data]);

  if (project.loading && !project.data) return <Loading what="Loading project" />;
  if (project.error) return <Failure error={project.error} />;
  const p = project.data!;
  const props: SectionProps = { project: p, id: route.id };
  return (
    <div class="project">
      <nav class="side" aria-label="Project sections">
        <p class="side-title">
          <a href="#/">All projects</a> / <strong>{p.ref}</strong>
        </p>
        <ul>
          {(Object.keys(labels) as Section[]).map((s) => (
            <li key={s} class={sub.has(s) ? 'sub' : undefined}>
              <a href={href(p.ref, s)} aria-current={route.section === s ? 'page' : undefined}>
                {labels[s]}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <section class="content" aria-labelledby="section-title">
        <h1 id="section-title" tabIndex={-1} ref={heading}>
          {labels[route.section]}
        </h1>
        {route.section === 'overview' && <Overview {...props} onChanged={project.reload} />}
        {route.section === 'sso' && <Providers {...props} />}
        {route.section === 'webhooks' && <Webhooks {...props} />}
        {route.section === 'secrets' && <Secrets {...props} />}
        {route.section === 'smtp' && <SmtpSettings {...props} />}
        {route.section === 'deliveries' && <Deliveries {...props} />}
        {route.section === 'blocked-keys' && <BlockedKeys {...props} />}
        {route.section === 'users' && <Users {...props} />}
        {route.section === 'audit' && <Audit {...props} />}
      </section>
    </div>
  );
}
