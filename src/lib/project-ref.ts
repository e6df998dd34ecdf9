// What a project ref looks like: 3-40 characters, lowercase letters, digits and hyphens, starting
// with a letter. The one definition, used by configuration (DEV_PROJECT_REF), project creation,
// the owner guard and every route schema with a {ref} (src/http/schemas.ts).
export const PROJECT_REF_PATTERN = '^[a-z][a-z0-9-]{2,39}$';
export const PROJECT_REF = new RegExp(PROJECT_REF_PATTERN);
