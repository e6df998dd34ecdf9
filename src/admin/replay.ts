// npm run admin -- replay --ref <ref> [--status dead|failed|dead,failed] [--since <iso>] [--until <iso>]
//                         [--webhook <id>] [--host <host>]
// Re-enqueues the matching deliveries as new runs (src/delivery/recovery/replay.ts), showing progress on
// stderr when it is a terminal; prints {"matched", "replayed", "superseded", "already_retried", "not_found", "not_found_ids"}.
import type { AppContext } from '../context.js';
import { replayDeliveries, type ReplayStatus } from '../delivery/index.js';

export async function replayCommand(ctx: AppContext, v: Record<string, string | undefined>): Promise<unknown> {
  if (!v.ref) throw new Error('missing --ref');
  const statuses = (v.status ?? 'dead').split(',').map((s) => s.trim()) as ReplayStatus[];
  if (statuses.some((s) => s !== 'dead' && s !== 'failed')) throw new Error('--status must be dead, failed or dead,failed');
  const date = (flag: string) => {
    const raw = v[flag];
    if (raw === undefined) return undefined;
    const d = new Date(raw);
    if (Number.isNaN(d.getTime())) throw new Error(`--${flag} must be a date/time such as 2026-01-31T10:00:00Z`);
    return d;
  };
  const tty = process.stderr.isTTY;
  const out = await replayDeliveries(
    ctx,
    v.ref,
    { statuses, since: date('since'), until: date('until'), webhookId: v.webhook, host: v.host },
    tty ? (phase, done, total) => process.stderr.write(`\r${phase === 'reading' ? 'reading the log' : 'enqueueing'}: ${done}/${total}   ${done >= total ? '\n' : ''}`) : undefined,
  );
  return { matched: out.matched, replayed: out.replayed, superseded: out.superseded.length, already_retried: out.taken.length, not_found: out.not_found.length, not_found_ids: out.not_found.slice(0, 100) };
}
