// The delivery side of the outbox: what happens to a message from the outbox topic until its final
// outcome, in stages (docs/architecture.md): consume/ -> attempt/ -> channels/ -> retry/ ->
// projection/ -> callbacks/, recovery/ to put dead or failed deliveries back on the log, and
// endpoints/ (circuit breaker, rate limit, held messages, auto-disable) in front of every attempt.
export { startWorkers, createPipeline } from './roles.js';
export type { Worker, OnFatal } from './worker.js';
export { rebuildDeliveries } from './projection/projector.js';
export { replayDeliveries, type ReplayStatus } from './recovery/replay.js';
// the Standard Webhooks key formats, so the API issues keys in the spelling the dispatcher signs with
export { newEd25519Key, publicKeyOf, PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX } from './channels/signature.js';
export { endpointViews, healthyCircuit, replayOffer, resetWebhookCircuit, type CircuitView } from './endpoints/view.js';
export { templateScope as webhookTemplateScope } from './channels/webhook.js';
export { checkTemplate, renderTemplate, templatePlaceholders, templateSecretNames, type TemplateScope } from './channels/template.js';
export { listBlockedKeys, skipHead, type BlockedKey } from './ordering/owner.js';
