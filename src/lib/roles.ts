// The four admin roles and what each may do: facts every layer may import (the request types in
// lib/http.ts, the services, the route table in features/admins/permissions.ts).
import { QuotaExceededError } from "./errors.ts";

export const ROLES = ["owner", "operator", "support", "viewer"] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = [
  "self",
  "admins.manage",
  "audit.read",
  "settings.read",
  "settings.write",
  "users.read",
  "users.write",
  "users.lifecycle",
  "links.read",
  "access.write",
  "servers.read",
  "servers.write",
  "inbounds.read",
  "inbounds.write",
  "templates.read",
  "templates.write",
  "certificates.read",
  "certificates.write",
  "system.read",
] as const;
export type Permission = (typeof PERMISSIONS)[number];

/**
 * The permissions that act on users, and so may be held for the admin's own users only (scope
 * `own`) instead of every user (scope `all`): docs/RESELLERS.md. The others act on the fleet.
 */
export const SCOPABLE_PERMISSIONS = [
  "users.read",
  "users.write",
  "users.lifecycle",
  "links.read",
  "access.write",
] as const satisfies readonly Permission[];
export type ScopablePermission = (typeof SCOPABLE_PERMISSIONS)[number];
export const SCOPES = ["own", "all"] as const;
export type Scope = (typeof SCOPES)[number];

export function isScopable(permission: string): permission is ScopablePermission {
  return (SCOPABLE_PERMISSIONS as readonly string[]).includes(permission);
}

const READ_ALL: Permission[] = [
  "self",
  "settings.read",
  "users.read",
  "links.read",
  "servers.read",
  "inbounds.read",
  "templates.read",
  "certificates.read",
  "system.read",
];

const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  /** Everything, including admins, the audit log and settings. */
  owner: new Set(PERMISSIONS),
  /** Runs the fleet: users, grants, inbounds, templates, certificates, servers; not admins or settings. */
  operator: new Set([
    ...READ_ALL,
    "users.write",
    "users.lifecycle",
    "access.write",
    "servers.write",
    "inbounds.write",
    "templates.write",
    "certificates.write",
  ]),
  /** Helps users: reads users and their links, resets usage, extends expiry; nothing else. */
  support: new Set(["self", "users.read", "links.read", "users.lifecycle"]),
  /** Reads everything an operator reads; changes nothing. */
  viewer: new Set(READ_ALL),
};

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

export function can(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].has(permission);
}

/** An API key may be narrowed to `narrow` when that role can do nothing `role` cannot. */
export function isWithin(narrow: Role, role: Role): boolean {
  for (const permission of ROLE_PERMISSIONS[narrow]) if (!can(role, permission)) return false;
  return true;
}

/** Permissions of a role, in the order of PERMISSIONS (GET /api/auth/me, the dashboard). */
export function permissionsOf(role: Role): Permission[] {
  return PERMISSIONS.filter((permission) => can(role, permission));
}

/** The own-scoped permissions as stored (a JSON array, admins.own_scope); anything else is dropped. */
export function readOwnScope(text: string | null | undefined): ScopablePermission[] {
  const parsed = parseJsonArray(text);
  return SCOPABLE_PERMISSIONS.filter((permission) => parsed?.includes(permission));
}

/** A stored JSON array of ids (admins.allowed_group_ids); null stays null (no limit), and text that
 * is not an array allows nothing (closed, not open). */
export function readIdList(text: string | null | undefined): string[] | null {
  if (text === null || text === undefined) return null;
  const parsed = parseJsonArray(text) ?? [];
  return parsed.filter((item): item is string => typeof item === "string");
}

function parseJsonArray(text: string | null | undefined): unknown[] | undefined {
  if (text === null || text === undefined) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** 403 naming the quota when a group is outside the admin's allowed groups (null: any group). */
export function checkAllowedGroups(groupIds: readonly string[], allowed: readonly string[] | null): void {
  if (allowed === null) return;
  const outside = groupIds.find((id) => !allowed.includes(id.toLowerCase()));
  if (outside !== undefined) {
    throw new QuotaExceededError("allowed_group_ids", `group ${outside} is not among your allowed groups`);
  }
}

/** 403 naming the quota when a plan is outside the admin's allowed plans (null: any plan). */
export function checkAllowedPlan(planId: string, allowed: readonly string[] | null): void {
  if (allowed === null || allowed.includes(planId.toLowerCase())) return;
  throw new QuotaExceededError("allowed_plan_ids", `plan ${planId} is not among your allowed plans`);
}
