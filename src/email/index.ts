// Email: sending through a project's SMTP or the platform default (guarded like every outbound
// connection), direct emails of the service itself, and the development mail sink with its routes.
export * from './send.js';
export * from './direct.js';
export * from './transport.js';
export * from './dev-sink.js';
export * from './dev-mail-routes.js';
export * from './owner-notice.js';
