import { render } from 'preact';
import '../styles.css';
import { SetupApp } from './setup-app';

// Opening another setup link in this tab only changes the fragment, which does not reload the
// page: start over with the new link.
addEventListener('hashchange', () => {
  if (/^#ssl_/.test(location.hash)) location.reload();
});

render(<SetupApp />, document.getElementById('app')!);
