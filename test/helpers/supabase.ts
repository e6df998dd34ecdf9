// The unchanged @supabase/supabase-js client as a project's app would create it (PKCE flow), set up
// for Node tests: sessions kept in memory, no auto-refresh, no URL detection. supabase-js builds its
// realtime client eagerly and Node 20 has no global WebSocket; realtime is not used, so it gets a
// transport that refuses to connect. The auth client is untouched.
import { createClient, type SupabaseClient } from '@supabase/supabase-js';

class NoWebSocket {
  constructor() {
    throw new Error('realtime is not used in these tests');
  }
}

function memory() {
  const items = new Map<string, string>();
  return { getItem: (k: string) => items.get(k) ?? null, setItem: (k: string, v: string) => void items.set(k, v), removeItem: (k: string) => void items.delete(k) };
}

export function supabaseClient(project: { projectUrl: string; anonKey: string }): SupabaseClient {
  return createClient(project.projectUrl, project.anonKey, {
    auth: { flowType: 'pkce', persistSession: false, autoRefreshToken: false, detectSessionInUrl: false, storage: memory() },
    realtime: { transport: NoWebSocket as unknown as typeof WebSocket },
  });
}
