// The background roles of this process (dispatcher, projector, ...), started per ROLES.
import type { AppContext } from '../context.js';

export interface Worker {
  name: string;
  stop(): Promise<void>;
}

export async function startWorkers(_ctx: AppContext, _roles: string[]): Promise<Worker[]> {
  return [];
}
