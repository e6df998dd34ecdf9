// Which channel handles which kind of message. The email channel (email.ts, sendEmailMessage) is
// built and documented separately (docs/email.md); this is the one place it is imported.
import type { EmailPayload, MessageKind, OutboxMessage } from '../message.js';
import type { Channel } from './channel.js';
import { sendEmailMessage } from './email.js';
import { httpChannel } from './http.js';
import { webhookChannel } from './webhook.js';

const emailChannel: Channel = {
  async describe(msg) {
    return { target: (msg.payload as EmailPayload).recipient, method: null, webhookId: null };
  },
  async attempt(msg: OutboxMessage, deps) {
    return sendEmailMessage(deps.ctx, { id: msg.id, project: msg.project, payload: msg.payload as EmailPayload });
  },
};

export const channels: Record<MessageKind, Channel> = {
  webhook: webhookChannel,
  http: httpChannel,
  email: emailChannel,
};
