-- Only the service's own login connects to the control database. A managed project's owner gets a
-- login role of the project's own (src/projects/managed-database.ts) on the same cluster; PUBLIC's
-- default CONNECT would let it into this database (it could read no table here, but there is no
-- reason for it to be let in). Skipped with a notice where the service's user may not change it
-- (an external database owned by another role): the operator revokes it there.
do $$
begin
  execute format('revoke connect on database %I from public', current_database());
exception when insufficient_privilege then
  raise notice 'could not revoke CONNECT on the control database from PUBLIC: %', sqlerrm;
end $$;
