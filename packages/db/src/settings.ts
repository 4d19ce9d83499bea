import type { Sql } from './connect.ts';

/**
 * Sets the owner's switch that lets a person approve what a token issued to them asked for
 * (`BULKHEAD_ALLOW_SELF_APPROVAL`, a one-person shop). It lives in `bulkhead_settings`, which only the
 * schema's owner writes: no deployable's login can switch separation of duties off from its session.
 */
export async function setAllowSelfApproval(sql: Sql, on: boolean): Promise<void> {
  await sql`
    insert into bulkhead_settings (name, value) values ('allow_self_approval', ${on ? 'on' : 'off'})
    on conflict (name) do update set value = excluded.value, updated_at = now()
    where bulkhead_settings.value is distinct from excluded.value`;
}
