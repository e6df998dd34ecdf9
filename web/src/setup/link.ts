// The setup link's secret on the page. It arrives in the URL fragment (browsers never send a
// fragment to a server, so it stays out of access logs and Referer headers), moves to this tab's
// sessionStorage at once, and the fragment is removed from the address bar and history. It then
// survives the round trip to the IdP during a test sign-in (same tab, same origin), and travels
// only as an Authorization header: never a cookie, so no other site can make the browser use it.
import { api } from '../api';

const KEY = 'integrations.sso_setup_link';

export function takeSecretFromUrl(): string | null {
  const hash = location.hash.slice(1);
  if (/^ssl_[A-Za-z0-9_-]{43}$/.test(hash)) {
    sessionStorage.setItem(KEY, hash);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return sessionStorage.getItem(KEY);
}

export const forgetSecret = () => sessionStorage.removeItem(KEY);

/** The setup page's API with the link's secret as the bearer. */
export const setupApi = <T,>(secret: string, method: string, path: string, body?: unknown) => api<T>(method, `sso-setup${path}`, body, secret);
