// Stop signals for a long-running process. The first SIGTERM or SIGINT starts a graceful stop;
// a second one exits at once (exit code 130), for the operator whose drain is taking too long.
//
// Ctrl-C under `npm start` delivers SIGINT twice within milliseconds: the terminal signals the
// whole foreground process group, and npm forwards what it got to its child as well. A repeat that
// close to the first is the same keypress, not a second request, so it is ignored.
import type { Logger } from 'pino';

const SAME_SIGNAL_MS = 500;

export function onStopSignals(log: Pick<Logger, 'warn'>, stop: (signal: string) => void, now = () => Date.now()): void {
  let first: { signal: string; at: number } | null = null;
  const on = (signal: string) => {
    const t = now();
    if (!first) {
      first = { signal, at: t };
      return stop(signal);
    }
    if (t - first.at < SAME_SIGNAL_MS) return;
    log.warn({ signal }, 'second stop signal: exiting now, without waiting for deliveries in flight (they are made again by the next owner)');
    process.exit(130);
  };
  process.on('SIGINT', () => on('SIGINT'));
  process.on('SIGTERM', () => on('SIGTERM'));
}

/**
 * Calls `onOrphaned` once when the parent process goes away (its pid changes: we were re-parented
 * to init or a subreaper). `npm start` killed with SIGKILL cannot forward anything; without this
 * the service would keep running, holding its port, with nobody to stop it.
 */
export function watchParent(onOrphaned: () => void, everyMs = 1000): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(timer);
      onOrphaned();
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
