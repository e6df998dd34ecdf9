// Projects: owners and their tokens, project creation and plans, the audit-log writer and the
// generation of a project's signing keys. The leaf every HTTP area builds on; imports nothing above
// the shared modules and the context.
export * from './projects.js';
export * from './audit-log.js';
export * from './signing-key.js';
