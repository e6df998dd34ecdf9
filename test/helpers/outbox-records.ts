// Outbox records as Debezium puts them on the topic (value: the base.outbox row's fields, headers:
// id, kind and the project Connect adds), for tests that drive a dispatch consumer directly, and a
// promise such tests open by hand to order the steps of a stand-in pipeline.

export interface OutboxRecordOptions {
  /** the `project` header (Connect's InsertHeader) */
  project: string;
  /** the `released` header of a copy put back (the releaser's `paced`, `probe`, …) */
  released?: string;
  /** an ordered message's key and place in it (base.http_request's ordering_key); the record's key */
  ordering?: { key: string; seq: number };
  partition?: number;
}

/** A base.http_request message record with id `id`. */
export function outboxRecord(id: string, o: OutboxRecordOptions) {
  return {
    ...(o.partition !== undefined ? { partition: o.partition } : {}),
    key: o.ordering?.key ?? id,
    value: JSON.stringify({
      id,
      kind: 'http',
      created_at: new Date().toISOString(),
      method: 'POST',
      url: 'https://example.com/hook',
      headers: {},
      body: {},
      callback_function: null,
      timeout_ms: null,
      ...(o.ordering ? { ordering_key: o.ordering.key, seq: o.ordering.seq } : {}),
    }),
    headers: { id, kind: 'http', project: o.project, ...(o.released ? { released: o.released } : {}) },
  };
}

/** A promise a test resolves by hand. */
export function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}
