// PostgreSQL: the control database's pool and transactions, migrations, connections to project
// databases, and the test for "the database is away" (503, not 500).
export * from './pool.js';
export * from './migrate.js';
export * from './project-dbs.js';
export * from './unavailable.js';
