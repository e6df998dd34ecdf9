// Outbound connections to addresses that customers choose (webhook and HTTP targets, SMTP hosts),
// and the SSRF guard they go through: the address policy, the URL check at creation time, the
// guarded undici dispatcher that vets the address at connect time, and the outcome of one attempt.
// Shared by delivery, email and management.
export * from './address.js';
export * from './agent.js';
export * from './url.js';
export * from './outcome.js';
