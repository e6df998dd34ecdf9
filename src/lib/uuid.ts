// What an id looks like: a UUID in its canonical text form, 8-4-4-4-12 hex digits, either case.
// The one definition, for route schemas (the `uuid` fragment of src/http/schemas.ts) and for code
// that checks an id before it reaches a uuid column, where a malformed one would be a 500.
//
// Why not stricter: every id is made by gen_random_uuid() or randomUUID() (version 4), and
// Postgres prints them in lower case, but the version and variant digits are not checked: an id
// the database could hold but we did not make (another version, an id from a project database's
// own generator) is then simply not found (404), never refused, and nothing a client got from us
// can fail the check. Upper case is accepted because Postgres accepts it for the same uuid.
// Why not looser: Postgres also accepts braces, missing hyphens and hyphens after any group of
// four, but no id is ever shown in those spellings, so they are refused before the database.
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
export const UUID = new RegExp(UUID_PATTERN);

/** True when `id` is a UUID in canonical form (see above): safe to pass to a uuid column. */
export const isUuid = (id: string): boolean => UUID.test(id);
