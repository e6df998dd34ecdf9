// The owner's view of a project's users: /v1/projects/{ref}/auth/users. Enough to run every rule of
// SSO user resolution: create a user with a verified or unverified email (to test linking), ban and
// unban (PATCH ban_duration), delete. Not gated on the sso plan, so an owner can still manage and
// remove users after a downgrade. Each change is an audit entry naming the user by id and email
// domain only: the trail outlives a deleted user, so it keeps no address or metadata values.
import type { FastifyInstance } from 'fastify';
import { parseDuration } from '../../config.js';
import { withTransaction } from '../../db/index.js';
import { ApiError } from '../../errors.js';
import { recordAudit } from '../../projects/index.js';
import { assertStorableJson, errorSchema, guardedProject, noQuery, refParams, TEXT } from '../../http/index.js';
import { emailDomain } from '../sign-in/domain-routing.js';
import type { SsoContext } from '../types.js';
import { deleteUser, insertUser, listUsers, loadUser, revokeUserSessions, setBannedUntil, setEmailConfirmed, type UserRecord } from './store.js';
import { presentUser } from './view.js';

const idParams = { type: 'object', required: ['ref', 'id'], properties: { ...refParams.properties, id: { type: 'string', maxLength: 64 } } } as const;
const metadata = { type: 'object', maxProperties: 100 } as const;

const ownerView = (u: UserRecord) => ({ ...presentUser(u), banned_until: u.banned_until ? new Date(u.banned_until).toISOString() : null });

const MAX_BAN_MS = 100 * 365 * 24 * 3600 * 1000;

/** "none" lifts a ban; otherwise a duration such as 24h or 30d from now, at most 100 years. */
function banUntil(duration: string): Date | null {
  if (duration === 'none') return null;
  let ms: number;
  try {
    ms = parseDuration(duration);
  } catch {
    throw new ApiError('validation_failed', 'ban_duration must be "none" or a duration such as 1h, 24h, 30d.');
  }
  if (ms <= 0) throw new ApiError('validation_failed', 'ban_duration must be positive.');
  // beyond it the instant is not a date JavaScript or PostgreSQL can hold
  if (ms > MAX_BAN_MS) throw new ApiError('validation_failed', 'ban_duration must be at most 100 years (876000h).');
  return new Date(Date.now() + ms);
}

export async function registerUserRoutes(app: FastifyInstance, ctx: SsoContext): Promise<void> {
  const base = '/v1/projects/:ref/auth/users';
  // no query parameters unless a route declares its own (the users list does)
  const common = { tags: ['users'], security: [{ ownerToken: [] }] , querystring: noQuery };

  app.get<{ Params: { ref: string }; Querystring: { page?: string; per_page?: string } }>(
    base,
    {
      config: { access: 'project-owner' },
      schema: {
        ...common,
        summary: "The project's users, oldest first",
        params: refParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          // querystrings are not coerced by this server, so numbers arrive as digit strings
          properties: {
            page: { type: 'string', pattern: '^[1-9][0-9]{0,5}$', description: 'from 1, default 1' },
            per_page: { type: 'string', pattern: '^[1-9][0-9]{0,2}$', description: '1 to 999, default 50' },
          },
        },
      },
    },
    async (req) => {
      const project = guardedProject(req);
      const page = Number(req.query.page ?? 1);
      const per_page = Number(req.query.per_page ?? 50);
      const { users, total } = await listUsers(ctx.db, project.ref, per_page, (page - 1) * per_page);
      return { users: users.map(ownerView), total, page, per_page };
    },
  );

  app.get<{ Params: { ref: string; id: string } }>(
    `${base}/:id`,
    { config: { access: 'project-owner' }, schema: { ...common, summary: 'One user with their identities', params: idParams } },
    async (req) => {
      const project = guardedProject(req);
      const user = await loadUser(ctx.db, project.ref, req.params.id);
      if (!user) throw new ApiError('user_not_found');
      return ownerView(user);
    },
  );

  app.post<{ Params: { ref: string }; Body: { email: string; email_confirm?: boolean; user_metadata?: Record<string, unknown>; app_metadata?: Record<string, unknown> } }>(
    base,
    {
      config: { access: 'project-owner' },
      schema: {
        ...common,
        summary: 'Create a user (email_confirm: true marks the email verified)',
        params: refParams,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['email'],
          properties: { email: { type: 'string', maxLength: 320, pattern: TEXT }, email_confirm: { type: 'boolean' }, user_metadata: metadata, app_metadata: metadata },
        },
        response: { 409: errorSchema },
      },
    },
    async (req, reply) => {
      const project = guardedProject(req);
      const { email, email_confirm, user_metadata, app_metadata } = req.body;
      if (!emailDomain(email) || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new ApiError('validation_failed', 'body.email is not a valid email address.');
      assertStorableJson('body.user_metadata', user_metadata);
      assertStorableJson('body.app_metadata', app_metadata);
      let id: string;
      try {
        id = await withTransaction(ctx.db, async (c) => {
          const made = await insertUser(c, project.ref, {
            email,
            emailConfirmed: email_confirm === true,
            user_metadata: user_metadata ?? {},
            app_metadata: { provider: 'email', providers: [], ...app_metadata },
          });
          await recordAudit(c, req, project.ref, {
            action: 'user.create',
            resourceType: 'user',
            resourceId: made,
            details: {
              email_domain: emailDomain(email),
              email_confirmed: email_confirm === true,
              user_metadata_keys: Object.keys(user_metadata ?? {}),
              app_metadata_keys: Object.keys(app_metadata ?? {}),
            },
          });
          return made;
        });
      } catch (e) {
        if ((e as { code?: string }).code === '23505') throw new ApiError('user_exists');
        throw e;
      }
      return reply.code(201).send(ownerView((await loadUser(ctx.db, project.ref, id))!));
    },
  );

  app.patch<{ Params: { ref: string; id: string }; Body: { ban_duration?: string; email_confirm?: boolean } }>(
    `${base}/:id`,
    {
      config: { access: 'project-owner' },
      schema: {
        ...common,
        summary: 'Ban (ban_duration: "24h"), unban (ban_duration: "none") or confirm the email of a user',
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { ban_duration: { type: 'string', minLength: 1, maxLength: 32, pattern: TEXT }, email_confirm: { type: 'boolean' } },
        },
      },
    },
    async (req) => {
      const project = guardedProject(req);
      const user = await loadUser(ctx.db, project.ref, req.params.id);
      if (!user) throw new ApiError('user_not_found');
      const { ban_duration, email_confirm } = req.body;
      await withTransaction(ctx.db, async (c) => {
        const details: Record<string, unknown> = { fields: Object.keys(req.body) };
        if (ban_duration !== undefined) {
          const until = banUntil(ban_duration);
          await setBannedUntil(c, user.id, until);
          // A ban ends the user's sessions at once, not when their access token expires.
          const revoked = until ? await revokeUserSessions(c, user.id) : 0;
          Object.assign(details, { ban: until ? 'set' : 'lifted', banned_until: until?.toISOString() ?? null, sessions_revoked: revoked });
        }
        if (email_confirm !== undefined) {
          await setEmailConfirmed(c, user.id, email_confirm);
          details.email_confirmed = email_confirm;
        }
        await recordAudit(c, req, project.ref, { action: 'user.update', resourceType: 'user', resourceId: user.id, details });
      });
      return ownerView((await loadUser(ctx.db, project.ref, user.id))!);
    },
  );

  app.delete<{ Params: { ref: string; id: string } }>(
    `${base}/:id`,
    { config: { access: 'project-owner' }, schema: { ...common, summary: 'Delete a user, their identities and sessions', params: idParams } },
    async (req, reply) => {
      const project = guardedProject(req);
      await withTransaction(ctx.db, async (c) => {
        const deleted = await deleteUser(c, project.ref, req.params.id);
        if (!deleted) throw new ApiError('user_not_found');
        const { id, email } = deleted;
        await recordAudit(c, req, project.ref, { action: 'user.delete', resourceType: 'user', resourceId: id, details: { email_domain: email ? emailDomain(email) : null } });
      });
      return reply.code(204).send();
    },
  );
}
