// Consumer group timing shared by every consumer of the service (dispatcher, retry, projector,
// callbacks). A member that dies without leaving is noticed after the session timeout; heartbeats
// go often enough that a live member is never mistaken for a dead one (six per session, at most one
// a second, which costs a member one small request a second while idle).
import type { Config } from '../config.js';

export function groupTimeouts(cfg: Pick<Config, 'DISPATCH_SESSION_TIMEOUT'>): { sessionTimeout: number; heartbeatInterval: number } {
  const sessionTimeout = cfg.DISPATCH_SESSION_TIMEOUT;
  return { sessionTimeout, heartbeatInterval: Math.max(100, Math.min(1_000, Math.floor(sessionTimeout / 6))) };
}
