// Hash routing (#/p/<ref>/webhooks): the service serves one page at /dashboard/, and nothing in
// the fragment ever reaches the server or its logs.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'projects' }
  | { page: 'project'; ref: string; section: Section; id?: string };

export const sections = ['overview', 'sso', 'webhooks', 'secrets', 'smtp', 'deliveries', 'blocked-keys', 'users', 'audit'] as const;
export type Section = (typeof sections)[number];

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'p' && parts[1]) {
    const section = (sections as readonly string[]).includes(parts[2] ?? '') ? (parts[2] as Section) : 'overview';
    return { page: 'project', ref: parts[1], section, id: parts[3] };
  }
  return { page: 'projects' };
}

export const href = (ref?: string, section?: Section, id?: string) =>
  '#/' + (ref ? ['p', ref, section, id].filter(Boolean).map((s) => encodeURIComponent(s!)).join('/') : '');

export function navigate(to: string) {
  location.hash = to.replace(/^#/, '');
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
