// Owners, their tokens and their projects: creation, plans, owner tokens. Used by the admin
// command, the owner guard of the Management API and the SSO routes.
import pg from 'pg';
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { PROJECT_REF } from '../lib/project-ref.js';
import { aad } from '../lib/secret-box.js';
import { randomToken, sha256 } from '../lib/tokens.js';
import { isUuid } from '../lib/uuid.js';
import { newSigningKey } from './signing-key.js';
import { createManagedDatabase } from './managed-database.js';

export { PROJECT_REF, PROJECT_REF_PATTERN } from '../lib/project-ref.js';
export { projectDatabaseName, projectRoleName } from './managed-database.js';
export type Plan = 'free' | 'pro' | 'enterprise';
export type Feature = 'sso' | 'custom_smtp';

export interface CreatedProject {
  ref: string;
  owner_token?: string;
  anon_key: string;
  project_url: string;
  database_url: string;
}

type Ctx = Pick<AppContext, 'db' | 'box' | 'cfg' | 'adminDatabaseUrl'>;

export const projectUrl = (ctx: Pick<AppContext, 'cfg'>, ref: string) => `${ctx.cfg.publicUrl}/projects/${ref}`;

export async function ensureOwner(ctx: Pick<AppContext, 'db'>, email: string): Promise<string> {
  const r = await ctx.db.query(
    `insert into owners (email) values ($1) on conflict (email) do update set email = excluded.email returning id`,
    [email.toLowerCase()],
  );
  return r.rows[0].id;
}

/** Issues a new owner token; only its hash is stored, so this is the one time it is seen. */
export async function issueOwnerToken(ctx: Pick<AppContext, 'db'>, ownerId: string, name = 'default'): Promise<{ id: string; token: string }> {
  const token = randomToken('own_');
  const r = await ctx.db.query('insert into owner_tokens (owner_id, token_hash, name) values ($1, $2, $3) returning id', [ownerId, sha256(token), name]);
  return { id: r.rows[0].id, token };
}

export async function revokeOwnerToken(ctx: Pick<AppContext, 'db'>, tokenOrId: string): Promise<boolean> {
  const byId = isUuid(tokenOrId);
  const r = await ctx.db.query(
    `update owner_tokens set revoked_at = now() where revoked_at is null and ${byId ? 'id = $1::uuid' : 'token_hash = $1'}`,
    [byId ? tokenOrId : sha256(tokenOrId)],
  );
  return (r.rowCount ?? 0) > 0;
}

export async function ownerForToken(ctx: Pick<AppContext, 'db'>, token: string): Promise<string | null> {
  return (await ownerTokenFor(ctx, token))?.ownerId ?? null;
}

/** The owner and the token row behind a bearer token (the token id names the actor in the audit log). */
export async function ownerTokenFor(ctx: Pick<AppContext, 'db'>, token: string): Promise<{ ownerId: string; tokenId: string } | null> {
  const r = await ctx.db.query(
    `update owner_tokens set last_used_at = now() where token_hash = $1 and revoked_at is null returning owner_id, id`,
    [sha256(token)],
  );
  return r.rows[0] ? { ownerId: r.rows[0].owner_id, tokenId: r.rows[0].id } : null;
}

export async function createProject(
  ctx: Ctx,
  input: { ref: string; plan: Plan; ownerEmail: string; databaseUrl?: string; siteUrl?: string; redirectUrls?: string[] },
): Promise<CreatedProject & { owner_id: string }> {
  if (!PROJECT_REF.test(input.ref)) throw new ApiError('validation_failed', 'ref must be 3-40 characters: lowercase letters, digits and hyphens, starting with a letter');
  const exists = await ctx.db.query('select 1 from projects where ref = $1', [input.ref]);
  if (exists.rowCount) throw new ApiError('project_exists');
  const ownerId = await ensureOwner(ctx, input.ownerEmail);
  // a managed database: the service keeps the admin login, the owner gets the project's own role
  const managed = input.databaseUrl ? null : await createManagedDatabase(ctx.adminDatabaseUrl, input.ref);
  const databaseUrl = input.databaseUrl ?? managed!.serviceUrl;
  const key = await newSigningKey();
  const anonKey = randomToken('anon_', 24);
  await ctx.db.query(
    `insert into projects (ref, owner_id, plan, database_url_enc, managed_database, anon_key, site_url, additional_redirect_urls, jwt_kid, jwt_private_jwk_enc, jwt_public_jwk)
     values ($1, $2, $3, $4, $5, $6, coalesce($7, 'http://localhost:3000'), $8, $9, $10, $11)`,
    [
      input.ref,
      ownerId,
      input.plan,
      ctx.box.seal(databaseUrl, aad.databaseUrl(input.ref)),
      !input.databaseUrl,
      anonKey,
      input.siteUrl ?? null,
      input.redirectUrls ?? [],
      key.kid,
      key.privateJwkSealed(ctx.box, input.ref),
      key.publicJwk,
    ],
  );
  return { ref: input.ref, owner_id: ownerId, anon_key: anonKey, project_url: projectUrl(ctx, input.ref), database_url: managed?.appUrl ?? databaseUrl };
}

export async function setPlan(ctx: Pick<AppContext, 'db'>, ref: string, plan: Plan): Promise<void> {
  const r = await ctx.db.query('update projects set plan = $2, updated_at = now() where ref = $1', [ref, plan]);
  if (r.rowCount === 0) throw new ApiError('project_not_found');
}

export async function planFeatures(ctx: Pick<AppContext, 'db'>, ref: string): Promise<Feature[]> {
  const r = await ctx.db.query('select p.features from projects j join plans p on p.name = j.plan where j.ref = $1', [ref]);
  return r.rows[0]?.features ?? [];
}
