// The database the service makes for a project it manages (no --database-url), on the cluster of
// its own control database.
//
// Two logins reach it. The service keeps the cluster's admin login (sealed in database_url_enc):
// it installs schema base, creates the replication slot and publication, and Debezium reads with
// it. The project's owner is given a role of the project's own, app_<ref>: LOGIN, no superuser,
// no CREATEDB, CREATEROLE or REPLICATION, owner of the project's database (so it may create schemas
// and tables, and public's tables are its own), and allowed base.http_request and base.send_email
// (base-schema.sql grants them to the database's owner). Nobody else may connect to the database.
// Until 2026-11-29 the owner was given the admin login itself: a superuser of the cluster, reaching
// the control database and every other project's database (found by an attacker's review).
//
// The role's password is shown once, in the answer of create-project, and never stored: the
// service does not need it. `npm run admin -- reset-database-password` is not there yet; until then
// an operator resets it with ALTER ROLE.
import pg from 'pg';
import { randomToken } from '../lib/tokens.js';

/** The database the service makes for a project it manages (one per project, on the stack's cluster). */
export const projectDatabaseName = (ref: string): string => `proj_${ref.replace(/-/g, '_')}`;

/** The project's own login role in its managed database. */
export const projectRoleName = (ref: string): string => `app_${ref.replace(/-/g, '_')}`;

/** Creates (or finds) the project's database and its role; returns the service's URL and the owner's. */
export async function createManagedDatabase(adminUrl: string, ref: string): Promise<{ serviceUrl: string; appUrl: string }> {
  const name = projectDatabaseName(ref);
  const role = projectRoleName(ref);
  const password = randomToken('', 24);
  const c = new pg.Client({ connectionString: adminUrl });
  c.on('error', () => {}); // a lost connection fails the query in progress, not the process
  await c.connect();
  try {
    const db = pg.escapeIdentifier(name);
    const r = pg.escapeIdentifier(role);
    const hasRole = await c.query('select 1 from pg_roles where rolname = $1', [role]);
    // inherit: the database's owner reaches public through the predefined role pg_database_owner
    const attrs = 'login nosuperuser nocreatedb nocreaterole noreplication nobypassrls inherit';
    await c.query(`${hasRole.rowCount ? 'alter' : 'create'} role ${r} with ${attrs} password ${pg.escapeLiteral(password)}`);
    const exists = await c.query('select 1 from pg_database where datname = $1', [name]);
    if (exists.rowCount === 0) await c.query(`create database ${db} owner ${r}`);
    else await c.query(`alter database ${db} owner to ${r}`);
    // only the project's role (the owner) and the service's superuser connect
    await c.query(`revoke connect on database ${db} from public`);
  } finally {
    await c.end();
  }
  const service = new URL(adminUrl);
  service.pathname = `/${name}`;
  const app = new URL(service);
  app.username = role;
  app.password = password;
  return { serviceUrl: service.toString(), appUrl: app.toString() };
}
