// A client of Kafka Connect's REST API: create, update, pause, restart and delete connectors and
// read their status. The per-project Debezium connectors it manages are rendered by
// src/outbox/connector.ts.
export interface ConnectorStatus {
  connector: string;
  connectorTrace?: string;
  tasks: { id: number; state: string; trace?: string }[];
}

/** The exception line of a Java stack trace (what failed and why), without the frames. */
function firstLine(trace: unknown): string | undefined {
  if (typeof trace !== 'string' || !trace) return undefined;
  const lines = trace.split('\n').map((l) => l.trim());
  // the deepest "Caused by:" usually names the real cause (connection refused, auth failed, ...)
  const cause = lines.filter((l) => l.startsWith('Caused by:')).at(-1);
  return (cause ?? lines[0]).slice(0, 500);
}

export class ConnectClient {
  constructor(private readonly baseUrl: string) {}

  private async call(method: string, p: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${this.baseUrl}${p}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : undefined,
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, json: text ? safeJson(text) : null };
  }

  async health(): Promise<boolean> {
    try {
      return (await this.call('GET', '/health')).status === 200;
    } catch {
      return false;
    }
  }

  /** PUT the config (create or update); Connect answers 409 while it rebalances, so retry. */
  async upsert(name: string, config: Record<string, string>): Promise<void> {
    for (let i = 0; ; i++) {
      const r = await this.call('PUT', `/connectors/${encodeURIComponent(name)}/config`, config);
      if (r.status === 200 || r.status === 201) return;
      if (r.status === 409 && i < 30) {
        await sleep(500);
        continue;
      }
      // Connect's error messages can quote the config: never pass them on verbatim with a password.
      throw new Error(`registering connector ${name} failed with HTTP ${r.status}: ${redact(JSON.stringify(r.json), config['database.password'])}`);
    }
  }

  async status(name: string): Promise<{ connector: string; tasks: { state: string; trace?: string }[] } | null> {
    const r = await this.call('GET', `/connectors/${encodeURIComponent(name)}/status`);
    if (r.status === 404) return null;
    return { connector: r.json?.connector?.state ?? 'UNKNOWN', tasks: (r.json?.tasks ?? []).map((t: any) => ({ state: t.state, trace: t.trace })) };
  }

  async waitRunning(name: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = 'unknown';
    while (Date.now() < deadline) {
      const s = await this.status(name).catch(() => null);
      if (s) {
        last = `${s.connector} / ${s.tasks.map((t) => t.state).join(',') || 'no tasks'}`;
        if (s.connector === 'RUNNING' && s.tasks.length > 0 && s.tasks.every((t) => t.state === 'RUNNING')) return;
        const failed = s.tasks.find((t) => t.state === 'FAILED');
        if (failed) throw new Error(`connector ${name} task failed: ${(failed.trace ?? '').split('\n')[0]}`);
      }
      await sleep(250);
    }
    throw new Error(`connector ${name} not running after ${timeoutMs / 1000}s (last: ${last})`);
  }

  /** The connector's current config as Connect holds it, or null when there is no such connector. */
  async config(name: string): Promise<Record<string, string> | null> {
    for (let i = 0; ; i++) {
      const r = await this.call('GET', `/connectors/${encodeURIComponent(name)}/config`);
      if (r.status === 404) return null;
      if (r.status === 200) return r.json as Record<string, string>;
      // 409 while Connect rebalances, 500 while a just-PUT connector restarts: both pass
      if ((r.status === 409 || r.status === 500) && i < 30) {
        await sleep(500);
        continue;
      }
      throw new Error(`reading connector ${name} failed with HTTP ${r.status}`);
    }
  }

  /**
   * Every connector's state in one request (GET /connectors?expand=status): connector and task
   * states with the first line of a failed one's trace.
   */
  async statuses(): Promise<Map<string, ConnectorStatus>> {
    const r = await this.call('GET', '/connectors?expand=status');
    if (r.status !== 200 || !r.json || typeof r.json !== 'object') throw new Error(`listing connector states failed with HTTP ${r.status}`);
    const out = new Map<string, ConnectorStatus>();
    for (const [name, v] of Object.entries(r.json as Record<string, any>)) {
      const st = v?.status ?? {};
      out.set(name, {
        connector: st.connector?.state ?? 'UNKNOWN',
        connectorTrace: firstLine(st.connector?.trace),
        tasks: (st.tasks ?? []).map((t: any) => ({ id: Number(t.id), state: String(t.state), trace: firstLine(t.trace) })),
      });
    }
    return out;
  }

  /**
   * Restarts the connector and its FAILED tasks only (KIP-745): a running task is not disturbed.
   * Connect answers 409 while its workers rebalance; the caller tries again at its next check.
   */
  async restartFailed(name: string): Promise<'restarted' | 'busy' | 'gone'> {
    const r = await this.call('POST', `/connectors/${encodeURIComponent(name)}/restart?includeTasks=true&onlyFailed=true`);
    if (r.status === 202 || r.status === 204 || r.status === 200) return 'restarted';
    if (r.status === 404) return 'gone';
    if (r.status === 409) return 'busy';
    throw new Error(`restarting connector ${name} failed with HTTP ${r.status}`);
  }

  /** Restarts the connector and all its tasks, running or not (KIP-745). */
  async restartAll(name: string): Promise<'restarted' | 'busy' | 'gone'> {
    const r = await this.call('POST', `/connectors/${encodeURIComponent(name)}/restart?includeTasks=true`);
    if (r.status === 202 || r.status === 204 || r.status === 200) return 'restarted';
    if (r.status === 404) return 'gone';
    if (r.status === 409) return 'busy';
    throw new Error(`restarting connector ${name} failed with HTTP ${r.status}`);
  }

  /** The configs Connect generated for the connector's tasks (what a task started now runs with). */
  async taskConfigs(name: string): Promise<Record<string, string>[]> {
    const r = await this.call('GET', `/connectors/${encodeURIComponent(name)}/tasks`);
    if (r.status !== 200 || !Array.isArray(r.json)) return [];
    return r.json.map((t: { config?: Record<string, string> }) => t.config ?? {});
  }

  /**
   * Stops the connector (KIP-875: its tasks are shut down, its config and offsets kept; no thread,
   * no replication connection) or resumes a stopped one. Connect answers 409 while it rebalances.
   */
  async setTarget(name: string, target: 'stop' | 'resume'): Promise<void> {
    for (let i = 0; ; i++) {
      const r = await this.call('PUT', `/connectors/${encodeURIComponent(name)}/${target}`);
      if (r.status === 202 || r.status === 204 || r.status === 200) return;
      if (r.status === 409 && i < 30) {
        await sleep(500);
        continue;
      }
      throw new Error(`${target} of connector ${name} failed with HTTP ${r.status}`);
    }
  }

  /**
   * Where the connector is in the change stream, from its committed source offset (GET
   * /connectors/{name}/offsets, Kafka 3.6+; readable while it is stopped): the transaction id and
   * the LSN of the last change it processed (Debezium's txId and lsn_proc). null when it has
   * committed no offset yet.
   */
  async processedPosition(name: string): Promise<{ txId: string; lsn: string } | null> {
    const r = await this.call('GET', `/connectors/${encodeURIComponent(name)}/offsets`);
    if (r.status !== 200) throw new Error(`reading the offsets of connector ${name} failed with HTTP ${r.status}`);
    const offset = (r.json?.offsets ?? [])[0]?.offset as Record<string, unknown> | undefined;
    // Both are processed: lsn_proc (the last change completely processed) and lsn (the change
    // whose record this offset is). For a logical decoding message (messageType MESSAGE), lsn_proc
    // still names a position before it, so the later of the two says where the connector was.
    const positions = [offset?.lsn_proc, offset?.lsn].filter((v) => v !== undefined && v !== null).map((v) => BigInt(v as number | string));
    if (offset?.txId === undefined || offset?.txId === null || positions.length === 0) return null;
    // Debezium stores an LSN as a 64-bit number; PostgreSQL writes it as two hex halves
    const n = positions.reduce((a, b) => (b > a ? b : a));
    return { txId: String(offset.txId), lsn: `${(n >> 32n).toString(16).toUpperCase()}/${(n & 0xffffffffn).toString(16).toUpperCase()}` };
  }

  /** The version of a connector plugin installed in Connect (GET /connector-plugins), or null if it is not there. */
  async pluginVersion(className: string): Promise<string | null> {
    const r = await this.call('GET', '/connector-plugins');
    const found = Array.isArray(r.json) ? r.json.find((p: { class?: string }) => p.class === className) : undefined;
    return typeof found?.version === 'string' ? found.version : null;
  }

  async list(): Promise<string[]> {
    const r = await this.call('GET', '/connectors');
    return Array.isArray(r.json) ? r.json : [];
  }

  async remove(name: string): Promise<void> {
    for (let i = 0; ; i++) {
      const r = await this.call('DELETE', `/connectors/${encodeURIComponent(name)}`);
      if (r.status === 204 || r.status === 404) return;
      if (r.status === 409 && i < 30) {
        await sleep(500);
        continue;
      }
      throw new Error(`deleting connector ${name} failed with HTTP ${r.status}`);
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
function redact(text: string, secret?: string) {
  return secret ? text.split(secret).join('[redacted]') : text;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
