// Sign-in with an owner token: checked against the API before it is kept (in sessionStorage only,
// so it goes when the tab closes) and sent as a bearer header, never in a URL.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { useAction } from '../ui/use-resource';
import { ErrorNote, Notice } from '../ui/feedback';

export function SignIn({ onSignedIn, expired }: { onSignedIn: (token: string) => void; expired: boolean }) {
  const [token, setToken] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  const check = useAction(async (t: string) => {
    await api('GET', 'projects', undefined, t);
    onSignedIn(t);
  });
  return (
    <main class="sign-in" id="main">
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim()) void check.run(token.trim());
        }}
      >
        <h1>Sign in</h1>
        <p>
          Paste an owner token. The operator issues one with <code>npm run admin -- issue-token</code>, and{' '}
          <code>create-project</code> prints one as <code>owner_token</code>.
        </p>
        {expired && <Notice kind="warning">Your token was refused (revoked or expired). Sign in again.</Notice>}
        <label for="owner-token">Owner token</label>
        <input
          id="owner-token"
          name="owner-token"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          ref={input}
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <p class="hint">Kept in this tab only (session storage) and sent as an Authorization header.</p>
        <ErrorNote error={check.error} title="Sign-in failed" />
        <button type="submit" class="primary" disabled={check.busy}>
          {check.busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
