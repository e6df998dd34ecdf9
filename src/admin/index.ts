// Operator tooling: the first-run bootstrap of a development project (run by main.ts). The
// operator command itself is cli.ts (`npm run admin`), an entry point, not imported.
export * from './bootstrap.js';
