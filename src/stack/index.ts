// The local development stack (PostgreSQL, Kafka, Kafka Connect as child processes), started on
// demand by createContext when no external endpoints are configured. The CLI is cli.ts.
export * from './local-stack.js';
export { startScript } from './start-script.js';
