// Builds the owner's dashboard into web/dist; the service serves it at /dashboard/ (src/http/dashboard.ts).
import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  // Relative asset URLs keep the page working behind a proxy that mounts the service under a prefix.
  base: './',
  plugins: [preact()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // The polyfill would be the only inline script; every browser we target has modulepreload,
    // and the Content-Security-Policy forbids inline scripts anyway.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    // Two pages on one build and style: the owner's dashboard, and the SSO setup page a setup link
    // opens for a customer's IT admin (docs/sso.md, "Setup links").
    rollupOptions: {
      input: {
        dashboard: fileURLToPath(new URL('index.html', import.meta.url)),
        setup: fileURLToPath(new URL('sso-setup.html', import.meta.url)),
      },
    },
  },
  server: {
    // `npx vite --config web/vite.config.ts` for development, against a service on :8000.
    proxy: { '/v1': process.env.DASHBOARD_API ?? 'http://127.0.0.1:8000' },
  },
});
