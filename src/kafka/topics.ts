// Topic and consumer-group names derive from TOPIC_PREFIX (topics also from the retry policy, so one
// list of delays in configuration is the whole truth about the ladder: src/delivery/retry/ladder.ts).
export interface Topics {
  outbox: string;
  retry: { topic: string; delayMs: number; step: number }[];
  dead: string;
  events: string;
}

function label(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** The service's consumer groups, one per role of a message's life (docs/architecture.md). */
export interface Groups {
  /** first attempts, from the outbox topic */
  dispatcher: string;
  /** attempts from the retry topics, each paused until due */
  retry: string;
  /** delivery events into the deliveries tables */
  projector: string;
  /** callback functions after a final outcome */
  callbacks: string;
}

export function groupNames(prefix: string): Groups {
  return { dispatcher: `${prefix}.dispatcher`, retry: `${prefix}.retry`, projector: `${prefix}.projector`, callbacks: `${prefix}.callbacks` };
}

export function topicNames(prefix: string, retryDelaysMs: number[]): Topics {
  return {
    outbox: `${prefix}.outbox`,
    retry: retryDelaysMs.map((delayMs, i) => ({ topic: `${prefix}.outbox.retry.${i + 1}-${label(delayMs)}`, delayMs, step: i + 1 })),
    dead: `${prefix}.outbox.dead`,
    events: `${prefix}.delivery-events`,
  };
}
