-- Setup links are single-use (issue 25, item 3; docs/sso.md, "Setup links"). A link's "used" state
-- was derived from its provider's row (used while the provider was not a draft), so deleting a
-- provider the owner had enabled made its link active again, and the link's holder could set up a
-- new provider on the same domains. It is now stored: `used_at` is set the moment the link's
-- provider goes live, and nothing clears it.
alter table sso_setup_links add column used_at timestamptz;

-- Live means routed to (enabled) or no longer a draft. Whatever path makes the provider live (the
-- link's activation, the owner's PATCH {"enabled": true}, or any other write), this trigger marks
-- the link in the same transaction. The service's own paths lock the link's row before the
-- provider's (src/sso/setup/links.ts, lockLinkOfProvider), the order every write through a link
-- uses, so the trigger's update never waits on a lock held the other way round.
create function sso_setup_link_mark_used() returns trigger language plpgsql as $$
begin
  update sso_setup_links set used_at = now() where provider_id = new.id and used_at is null;
  return null;
end
$$;

create trigger sso_setup_link_used after insert or update of enabled, draft on sso_providers
  for each row when (new.enabled or not new.draft) execute function sso_setup_link_mark_used();

-- Backfill: links activated through themselves, links whose provider is live now, and links whose
-- provider was enabled once (the audit trail's sso_provider.update with enabled: true, written by
-- the activation and by the owner's PATCH alike) and has since been deleted: those were the ones
-- the old rule made active again. When exactly an owner enabled a draft was not stored; the
-- activation time, else the audit entry's, else now, stands for it.
update sso_setup_links l
   set used_at = coalesce(
         l.activated_at,
         (select min(a.created_at) from audit_log a
           where a.project_ref = l.project_ref and a.resource_type = 'sso_provider' and a.resource_id = l.provider_id::text
             and a.action = 'sso_provider.update' and a.details ->> 'enabled' = 'true'),
         now())
 where l.used_at is null
   and (l.activated_at is not null
        or exists (select 1 from sso_providers p where p.id = l.provider_id and (p.enabled or not p.draft))
        or exists (select 1 from audit_log a
                    where a.project_ref = l.project_ref and a.resource_type = 'sso_provider' and a.resource_id = l.provider_id::text
                      and a.action = 'sso_provider.update' and a.details ->> 'enabled' = 'true'));
