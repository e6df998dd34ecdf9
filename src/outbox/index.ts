// The transactional outbox on the SQL side: installing the base schema in a project's database,
// its Debezium connector (rendered here, managed through src/kafka's Connect client), webhook
// triggers, and the connector supervisor and idle capture run by the dispatcher role.
export * from './connector.js';
export * from './enable.js';
export * from './service.js';
export * from './webhook-triggers.js';
export * from './supervisor.js';
export * from './idle-capture.js';
export * from './row-filter.js';
export * from './backfill.js';
export * from './debezium-version.js';
