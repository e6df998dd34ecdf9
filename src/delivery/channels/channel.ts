// What a delivery channel (webhook, http, email) provides to the dispatcher.
import type { Dispatcher } from 'undici';
import type { AppContext } from '../../context.js';
import type { DeliveryDirectory } from './send-config.js';
import type { OutboxMessage } from '../message.js';
import type { AttemptOutcome } from '../../outbound/index.js';

export interface ChannelDeps {
  ctx: AppContext;
  directory: DeliveryDirectory;
  /** the SSRF-guarded undici Agent shared by all HTTP attempts of this process */
  http: Dispatcher;
}

/** Where a message goes, as written (placeholders kept): what the deliveries table shows. */
export interface DeliveryTarget {
  target: string;
  method: string | null;
  webhookId: string | null;
}

export interface Channel {
  describe(msg: OutboxMessage, deps: ChannelDeps): Promise<DeliveryTarget>;
  /** Makes one attempt. Resolves with the classified outcome; never rejects for a target's fault. */
  attempt(msg: OutboxMessage, deps: ChannelDeps): Promise<AttemptOutcome>;
}
