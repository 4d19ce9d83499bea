import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** SCIM's schema URNs (RFC 7643, RFC 7644). */
export const SCHEMAS = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  list: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
  patch: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
} as const;

/** A person as the database's SCIM functions return them. */
export interface UserRow {
  id: string;
  user_name: string;
  external_id: string | null;
  name: string | null;
  email: string | null;
  active: boolean;
  groups: string[];
  created_at: Date;
  updated_at: Date;
}

/** A group as the database's SCIM functions return it. */
export interface GroupRow {
  id: string;
  display_name: string;
  external_id: string | null;
  members: string[];
  created_at: Date;
  updated_at: Date;
}

/** A SCIM User resource (RFC 7643 §4.1), the attributes Bulkhead keeps. */
export function userResource(u: UserRow, base: string) {
  return {
    schemas: [SCHEMAS.user],
    id: u.id,
    userName: u.user_name,
    ...(u.external_id ? { externalId: u.external_id } : {}),
    ...(u.name ? { name: { formatted: u.name }, displayName: u.name } : {}),
    emails: u.email ? [{ value: u.email, type: 'work', primary: true }] : [],
    active: u.active,
    groups: u.groups.map((g) => ({ display: g })),
    meta: meta('User', u, `${base}/Users/${u.id}`),
  };
}

/** A SCIM Group resource (RFC 7643 §4.2). */
export function groupResource(g: GroupRow, base: string) {
  return {
    schemas: [SCHEMAS.group],
    id: g.id,
    displayName: g.display_name,
    ...(g.external_id ? { externalId: g.external_id } : {}),
    members: g.members.map((m) => ({ value: m, $ref: `${base}/Users/${m}` })),
    meta: meta('Group', g, `${base}/Groups/${g.id}`),
  };
}

function meta(resourceType: string, r: { created_at: Date; updated_at: Date }, location: string) {
  return {
    resourceType,
    created: r.created_at.toISOString(),
    lastModified: r.updated_at.toISOString(),
    location,
  };
}

/** A SCIM answer: `application/scim+json`. */
export function scimJson(c: Context, body: unknown, status: ContentfulStatusCode = 200): Response {
  return c.body(JSON.stringify(body), status, { 'Content-Type': 'application/scim+json; charset=utf-8' });
}

/** A SCIM error (RFC 7644 §3.12). */
export function scimError(
  c: Context,
  status: ContentfulStatusCode,
  detail: string,
  scimType?: string,
): Response {
  return scimJson(
    c,
    { schemas: [SCHEMAS.error], status: String(status), detail, ...(scimType ? { scimType } : {}) },
    status,
  );
}

/** A list response of all `resources` (Bulkhead's lists are small: no paging beyond one page). */
export function listResponse(c: Context, resources: unknown[]): Response {
  return scimJson(c, {
    schemas: [SCHEMAS.list],
    totalResults: resources.length,
    startIndex: 1,
    itemsPerPage: resources.length,
    Resources: resources,
  });
}

/** The value of a filter `<attribute> eq "<value>"` (the one filter IdPs send), or an error sentence. */
export function eqFilter(filter: string | undefined, attribute: string): string | null | Error {
  if (filter === undefined) return null;
  const m = /^\s*(\w+)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$/i.exec(filter);
  if (!m || m[1]!.toLowerCase() !== attribute.toLowerCase())
    return new Error(`only the filter ${attribute} eq "…" is supported`);
  return m[2]!.replace(/\\(.)/g, '$1');
}

/** SCIM's booleans as IdPs send them (Entra sends "False" as a string in PATCH). */
export function scimBoolean(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  return undefined;
}
