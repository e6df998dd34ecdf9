// Users as @supabase/auth-js expects them (its User and UserIdentity types), with their
// identities (loaded by store.ts). The owner's API shows the same object plus banned_until.
import { providerLabel } from '../sign-in/user-resolution.js';
import type { UserRecord } from './store.js';

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export function presentUser(u: UserRecord): Record<string, unknown> {
  return {
    id: u.id,
    aud: 'authenticated',
    role: 'authenticated',
    email: u.email ?? '',
    email_confirmed_at: iso(u.email_confirmed_at) ?? undefined,
    confirmed_at: iso(u.email_confirmed_at) ?? undefined,
    phone: '',
    last_sign_in_at: iso(u.last_sign_in_at) ?? undefined,
    app_metadata: u.app_metadata,
    user_metadata: u.user_metadata,
    identities: u.identities.map((i) => ({
      identity_id: i.id,
      id: i.subject,
      user_id: i.user_id,
      identity_data: i.identity_data,
      provider: providerLabel(i.provider_id),
      provider_type: i.provider_kind,
      email: i.email ?? undefined,
      last_sign_in_at: iso(i.last_sign_in_at) ?? undefined,
      created_at: iso(i.created_at),
      updated_at: iso(i.updated_at),
    })),
    created_at: iso(u.created_at),
    updated_at: iso(u.updated_at),
    is_anonymous: false,
  };
}
