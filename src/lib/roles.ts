// The four admin roles and what each may do: facts every layer may import (the request types in
// lib/http.ts, the services, the route table in features/admins/permissions.ts).

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
