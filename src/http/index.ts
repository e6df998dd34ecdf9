// The HTTP layer shared by every route area: the server (error handling, limits, metrics), the one
// owner guard of /v1/projects/{ref}/..., the shared route schemas, and the health and dashboard
// routes. Route areas (management, sso, email's dev sink) import this; it imports none of them.
export * from './server.js';
export * from './health.js';
export * from './dashboard.js';
export * from './access.js';
export * from './schemas.js';
