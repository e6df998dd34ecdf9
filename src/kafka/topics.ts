// Topic names derive from TOPIC_PREFIX and the retry policy, so one list of delays in configuration
// is the whole truth about the ladder (see src/delivery/retry/ladder.ts for its use).
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

export function topicNames(prefix: string, retryDelaysMs: number[]): Topics {
  return {
    outbox: `${prefix}.outbox`,
    retry: retryDelaysMs.map((delayMs, i) => ({ topic: `${prefix}.outbox.retry.${i + 1}-${label(delayMs)}`, delayMs, step: i + 1 })),
    dead: `${prefix}.outbox.dead`,
    events: `${prefix}.delivery-events`,
  };
}
