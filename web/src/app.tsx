// The shell: sign-in gate, header with sign-out, and the page for the current route.
import { useEffect, useState } from 'preact/hooks';
import { onUnauthorized, session } from './api';
import { useRoute } from './router';
import { SignIn } from './pages/sign-in';
import { Projects } from './pages/projects';
import { ProjectPage } from './pages/project';

export function App() {
  const [token, setToken] = useState(session.token());
  const [expired, setExpired] = useState(false);
  const route = useRoute();

  const signOut = (why?: 'expired') => {
    session.signOut();
    setToken(null);
    setExpired(why === 'expired');
    location.hash = '#/';
  };
  useEffect(() => onUnauthorized(() => signOut('expired')), []);

  if (!token) {
    return (
      <SignIn
        expired={expired}
        onSignedIn={(t) => {
          session.signIn(t);
          setExpired(false);
          setToken(t);
        }}
      />
    );
  }
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/">
          Integrations <span>dashboard</span>
        </a>
        <button type="button" class="ghost" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {route.page === 'projects' ? <Projects /> : <ProjectPage key={route.ref} route={route} />}
      </main>
    </>
  );
}
