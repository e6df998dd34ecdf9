// A transaction whose rollback fails leaves its connection in an unknown state (still inside the
// transaction, or as role base_callback): it must be closed, never handed to the next caller.
// These stand-in pools record how each connection is released; the database cannot be made to
// fail a rollback on a live connection on purpose, so this contract is checked here, and the
// real-database paths (callbacks, projection) by their integration tests.
import { describe, expect, it } from 'vitest';
import type { Pool } from '../../../src/db/index.js';
import { callCallback } from '../../../src/delivery/callbacks/call.js';
import { applyEvents } from '../../../src/delivery/projection/fold.js';
import type { DeliveryEvent } from '../../../src/delivery/events.js';

function brokenPool(failOn: RegExp) {
  const released: Array<Error | undefined | boolean> = [];
  const client = {
    async query(q: string | { text: string }) {
      const text = typeof q === 'string' ? q : q.text;
      if (text === 'rollback') throw new Error('connection lost during rollback');
      if (failOn.test(text)) throw Object.assign(new Error('the statement failed'), { code: '57014' });
      return { rows: [], rowCount: 0 };
    },
    release(err?: Error | boolean) {
      released.push(err);
    },
  };
  const pool = { connect: async () => client, query: client.query } as unknown as Pool;
  return { pool, released };
}

describe('a failed rollback closes its connection', () => {
  it('callbacks: the connection goes with an error, and the callback error is what is reported', async () => {
    const { pool, released } = brokenPool(/base\._callback/);
    await expect(callCallback(pool, 'public.cb', { id: 'x' } as never, 1000)).rejects.toThrow(/public\.cb/);
    expect(released).toHaveLength(1);
    expect(released[0]).toBeInstanceOf(Error);
  });

  it('projection with callback events: the connection goes with an error', async () => {
    const { pool, released } = brokenPool(/callback|insert into/);
    const events = [{ type: 'CallbackInvoked', deliveryId: '00000000-0000-4000-8000-000000000001', run: 1, at: Date.now(), ok: true, attempt: 1 } as unknown as DeliveryEvent];
    await expect(applyEvents(pool, events)).rejects.toThrow();
    expect(released).toHaveLength(1);
    expect(released[0]).toBeInstanceOf(Error);
  });
});
