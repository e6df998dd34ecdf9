// Kafka and Kafka Connect: the kafkajs client and topic creation, topic and consumer-group names,
// consumer plumbing (subscribing, periodic commits), consumer-group timeouts, the producers' partitioner, and the Connect REST client that manages the outbox connectors.
export * from './client.js';
export * from './topics.js';
export * from './consumer.js';
export * from './group.js';
export * from './connect.js';
export * from './partitioner.js';
