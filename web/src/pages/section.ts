// What the project page (project.tsx) passes to the section it shows: the project, and the id
// the route names inside the section (a provider, a webhook, a delivery), if any.
import type { Project } from '../types';

export interface SectionProps {
  project: Project;
  id?: string;
}
