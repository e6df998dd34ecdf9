// The SMTP outcome mapping, case by case, on the error shapes nodemailer produces.
import { describe, expect, it } from 'vitest';
import { BlockedTargetError } from '../../../src/outbound/agent.js';
import { acceptedVerdict, classifySendError } from '../../../src/email/outcome.js';

const smtpError = (code: string, response?: string, extra: object = {}) => {
  const responseCode = response ? Number(response.slice(0, 3)) : undefined;
  return Object.assign(new Error(`failed${response ? ': ' + response : ''}`), { code, response, responseCode, ...extra });
};

describe('SMTP outcome mapping', () => {
  it('accepted → delivered with the server reply', () => {
    expect(acceptedVerdict('250 2.0.0 Ok: queued as ABC', 4096)).toEqual({ outcome: 'delivered', reason: 'accepted', smtpCode: 250, responseBody: '250 2.0.0 Ok: queued as ABC' });
  });

  it.each([
    ['421 4.3.2 shutting down', 'failed'],
    ['451 4.7.1 greylisted', 'failed'],
    ['452 4.2.2 mailbox full', 'failed'],
    ['550 5.1.1 no such user', 'dead'],
    ['552 5.3.4 too big', 'dead'],
    ['554 5.7.1 rejected', 'dead'],
    ['535 5.7.8 bad credentials', 'dead'],
  ])('%s → %s', (reply, outcome) => {
    const v = classifySendError(smtpError('EMESSAGE', reply), 4096);
    expect(v).toMatchObject({ outcome, smtpCode: Number(reply.slice(0, 3)), responseBody: reply });
  });

  it("judges a refused recipient by that recipient's own reply", () => {
    const rcpt = smtpError('EENVELOPE', '450 4.2.1 try later');
    const all = smtpError('EENVELOPE', '450 4.2.1 try later', { rejectedErrors: [rcpt] });
    expect(classifySendError(all, 4096)).toMatchObject({ outcome: 'failed', smtpCode: 450 });
  });

  it.each(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ETLS', 'EPROTOCOL'])('%s without a reply → failed', (code) => {
    expect(classifySendError(smtpError(code), 4096)).toMatchObject({ outcome: 'failed' });
  });

  it('a message that can never be sent as it is → dead', () => {
    expect(classifySendError(smtpError('EENVELOPE'), 4096).outcome).toBe('dead');
    expect(classifySendError(smtpError('EMESSAGE'), 4096).outcome).toBe('dead');
  });

  it('a blocked target → dead', () => {
    expect(classifySendError(new BlockedTargetError('smtp.evil', '10.0.0.1', 'private'), 4096)).toMatchObject({ outcome: 'dead', error: expect.stringMatching(/blocked target/) });
  });

  it('truncates the reply and cuts out known secrets', () => {
    const v = classifySendError(smtpError('EAUTH', '535 nope hunter2-secret ' + 'x'.repeat(100)), 20, ['hunter2-secret']);
    expect(v.responseBody).toBe('535 nope [redacted] ');
    expect(v.error).not.toContain('hunter2-secret');
  });
});
