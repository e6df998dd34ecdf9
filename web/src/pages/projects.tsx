// The owner's projects (the API lists only those of the signed-in owner).
import { href } from '../router';
import type { ProjectSummary } from '../types';
import { Empty, Failure, Loading, when } from '../ui/feedback';
import { useResource } from '../ui/use-resource';

export function Projects() {
  const projects = useResource<ProjectSummary[]>('projects');
  return (
    <section>
      <h1>Your projects</h1>
      {projects.loading && <Loading what="Loading projects" />}
      {projects.error && <Failure error={projects.error} />}
      {projects.data && projects.data.length === 0 && (
        <Empty>
          No projects yet. The operator creates one with <code>npm run admin -- create-project --ref &lt;ref&gt; --plan &lt;plan&gt;</code>.
        </Empty>
      )}
      {projects.data && projects.data.length > 0 && (
        <ul class="project-list">
          {projects.data.map((p) => (
            <li key={p.ref}>
              <a href={href(p.ref)} class="project-link">
                <strong>{p.ref}</strong>
                <span class="badge muted">{p.plan}</span>
                <span class="dim">created {when(p.created_at)}</span>
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
