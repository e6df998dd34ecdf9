// The Management API for a project's owner (/v1/projects/{ref}/...): settings, webhooks, secrets,
// SMTP, the audit trail, and the outbox's deliveries with their retry and replay.
export { registerManagement } from './routes.js';
export { registerDeliveries } from './deliveries.js';
export { registerDeliveryRetry } from './delivery-retry.js';
export { registerOrdering } from './ordering.js';
