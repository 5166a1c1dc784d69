// Which permission each protected route needs — one table, so a reviewer reads the whole policy in
// one place (the roles and their permissions are in lib/roles.ts). app.ts refuses to register a
// protected route missing from ROUTE_PERMISSIONS (a new route cannot forget its permission) and
// checks the caller's role against it on every request.
import { isScopable, type Permission } from "../../lib/roles.ts";

/** `METHOD url` as Fastify registers it (`:param`) → the permission it needs. HEAD follows GET. */
const ROUTE_PERMISSIONS: Record<string, Permission> = {
  "POST /api/auth/logout": "self",
  "GET /api/auth/me": "self",
  "POST /api/auth/totp/enroll": "self",
  "POST /api/auth/totp/confirm": "self",
  "POST /api/auth/totp/disable": "self",
  "POST /api/auth/password": "self",
  "GET /api/api-keys": "self",
  "POST /api/api-keys": "self",
  "DELETE /api/api-keys/:id": "self",

  "GET /api/admins": "admins.manage",
  "POST /api/admins": "admins.manage",
  "GET /api/admins/:id": "admins.manage",
  "PUT /api/admins/:id": "admins.manage",
  "DELETE /api/admins/:id": "admins.manage",
  "GET /api/admins/:id/api-keys": "admins.manage",
  "DELETE /api/admins/:id/api-keys/:key_id": "admins.manage",
  "GET /api/audit": "audit.read",

  // Groups: read as inbounds are read; changing one grants or revokes, so access.write.
  "GET /api/groups": "inbounds.read",
  "GET /api/groups/:id": "inbounds.read",
  "POST /api/groups": "access.write",
  "PUT /api/groups/:id": "access.write",
  "DELETE /api/groups/:id": "access.write",
  "POST /api/groups/:id/inbounds": "access.write",
  "DELETE /api/groups/:id/inbounds/:inbound_id": "access.write",
  "GET /api/groups/:id/members": "users.read",
  "POST /api/groups/:id/members": "access.write",
  "POST /api/groups/:id/members/remove": "access.write",
  "DELETE /api/groups/:id/members/:user_id": "access.write",
  // Plans: read as users are read; a plan decides what users get, so changing one is users.write.
  "GET /api/plans": "users.read",
  "GET /api/plans/:id": "users.read",
  "POST /api/plans": "users.write",
  "PUT /api/plans/:id": "users.write",
  "DELETE /api/plans/:id": "users.write",
  "POST /api/users/:id/renew": "users.write",
  "GET /api/users": "users.read",
  "POST /api/users": "users.write",
  "POST /api/users/bulk": "users.write",
  "GET /api/users/search": "users.read",
  "GET /api/users/:id": "users.read",
  "PUT /api/users/:id": "users.write",
  "DELETE /api/users/:id": "users.write",
  "POST /api/users/:id/revoke-subscription": "users.write",
  // Moving users between admins is an owner's (docs/RESELLERS.md).
  "PATCH /api/users/:id/owner": "admins.manage",
  // support may extend expiry and reset usage; the other actions check users.write themselves.
  "POST /api/users/bulk-actions": "users.lifecycle",
  "GET /api/users/:id/usage": "links.read",
  "GET /api/users/:id/access": "links.read",
  "GET /api/users/:user_id/configs": "links.read",
  "GET /api/users/:user_id/access/:inbound_id/config": "links.read",

  "GET /api/certificates": "certificates.read",
  "POST /api/certificates": "certificates.write",
  "GET /api/certificates/:id": "certificates.read",
  "PUT /api/certificates/:id": "certificates.write",
  "DELETE /api/certificates/:id": "certificates.write",
  "POST /api/certificates/:id/renew": "certificates.write",

  "GET /api/templates": "templates.read",
  "POST /api/templates": "templates.write",
  "POST /api/templates/starters": "templates.write",
  "GET /api/templates/:id": "templates.read",
  "PUT /api/templates/:id": "templates.write",
  "DELETE /api/templates/:id": "templates.write",

  "GET /api/servers": "servers.read",
  "POST /api/servers": "servers.write",
  "GET /api/servers/:id": "servers.read",
  "PUT /api/servers/:id": "servers.write",
  "DELETE /api/servers/:id": "servers.write",
  "POST /api/servers/:id/test": "servers.write",
  "GET /api/servers/:id/stats": "servers.read",
  "POST /api/servers/:id/sync": "servers.write",
  "POST /api/servers/:id/node-enrollment": "servers.write",
  "GET /api/servers/:id/node": "servers.read",
  "GET /api/servers/:id/node-base": "servers.read",
  "GET /api/servers/:id/node-log": "servers.read",
  "GET /api/servers/:id/online": "servers.read",
  "GET /api/users/:id/online": "users.read",
  "GET /api/users/:id/fair-use": "users.read",
  "GET /api/users/:id/devices": "users.read",
  "DELETE /api/users/:id/devices/:device_id": "users.write",
  "GET /api/fair-use/settings": "settings.read",
  "PUT /api/fair-use/settings": "settings.write",
  "PUT /api/servers/:id/node-base": "servers.write",

  "GET /api/servers/:server_id/inbounds": "inbounds.read",
  "POST /api/servers/:server_id/inbounds": "inbounds.write",
  "GET /api/servers/:server_id/inbounds/:inbound_id": "inbounds.read",
  "PUT /api/servers/:server_id/inbounds/:inbound_id": "inbounds.write",
  "DELETE /api/servers/:server_id/inbounds/:inbound_id": "inbounds.write",
  "GET /api/servers/:server_id/inbounds/:inbound_id/configs": "inbounds.read",
  "GET /api/servers/:server_id/inbounds/:inbound_id/hosts": "inbounds.read",
  "POST /api/servers/:server_id/inbounds/:inbound_id/hosts": "inbounds.write",
  "PUT /api/servers/:server_id/inbounds/:inbound_id/hosts/order": "inbounds.write",
  "GET /api/servers/:server_id/inbounds/:inbound_id/hosts/:host_id": "inbounds.read",
  "PUT /api/servers/:server_id/inbounds/:inbound_id/hosts/:host_id": "inbounds.write",
  "DELETE /api/servers/:server_id/inbounds/:inbound_id/hosts/:host_id": "inbounds.write",
  "POST /api/servers/:server_id/inbounds/:inbound_id/users": "access.write",
  "POST /api/servers/:server_id/inbounds/:inbound_id/users/bulk": "access.write",
  "DELETE /api/servers/:server_id/inbounds/:inbound_id/users/:email": "access.write",

  "GET /api/subscriptions/cache": "system.read",
  "GET /api/subscription-settings": "settings.read",
  "PUT /api/subscription-settings": "settings.write",

  // Webhook URLs can carry the receiver's own secret: owners only, reading included.
  "GET /api/webhooks": "settings.write",
  "POST /api/webhooks": "settings.write",
  "GET /api/webhooks/:id": "settings.write",
  "PUT /api/webhooks/:id": "settings.write",
  "DELETE /api/webhooks/:id": "settings.write",
  "GET /api/webhooks/:id/deliveries": "settings.write",
  "POST /api/webhooks/:id/test": "settings.write",
  "GET /api/auth/telegram": "self",
  "PUT /api/auth/telegram": "self",
  "DELETE /api/auth/telegram": "self",
  "POST /api/auth/telegram/test": "self",
  "GET /api/auth/telegram/deliveries": "self",
  "GET /api/usage": "servers.read",
  "GET /api/overview": "servers.read",

  // Importing another panel (issue 51) creates users, inbounds and admins fleet-wide: owners only.
  "POST /api/import/uploads": "admins.manage",
  "POST /api/import/jobs": "admins.manage",
  "GET /api/import/job": "admins.manage",
};

export function routePermission(method: string, url: string): Permission | undefined {
  return ROUTE_PERMISSIONS[`${method === "HEAD" ? "GET" : method} ${url}`];
}

/**
 * How a protected route reaches users, for an admin who holds its permission with scope own
 * (docs/RESELLERS.md): `user` names one user in the path (another admin's user is a 404, checked in
 * app.ts before the handler runs, so ids cannot be probed); `owned` narrows to the admin's users in
 * its handler (lists, search, creates, bulk work, ids in the body); `fleet` reaches every owner's
 * users (a group's inbounds, an inbound's configs, who is online on a server, the audit log,
 * webhooks): an admin with any own scope gets 403 scope_all_required. Routes not listed touch no
 * user. app.ts refuses to register a route whose permission acts on users (lib/roles.ts
 * SCOPABLE_PERMISSIONS) without an entry here, so a new user route cannot miss the scope.
 */
export type UserReach =
  | { kind: "user"; param: string }
  | { kind: "owned" }
  | { kind: "fleet" }
  | { kind: "none" };

const ONE_USER = { kind: "user", param: "id" } as const;
const ONE_USER_ID = { kind: "user", param: "user_id" } as const;
const OWNED = { kind: "owned" } as const;
const FLEET = { kind: "fleet" } as const;
/** A user permission on a route that reads no user (a plan's definition). */
const NO_USER = { kind: "none" } as const;

const ROUTE_USER_REACH: Record<string, UserReach> = {
  "GET /api/users": OWNED,
  "POST /api/users": OWNED,
  "POST /api/users/bulk": OWNED,
  "GET /api/users/search": OWNED,
  "POST /api/users/bulk-actions": OWNED,
  "GET /api/users/:id": ONE_USER,
  "PUT /api/users/:id": ONE_USER,
  "DELETE /api/users/:id": ONE_USER,
  "PATCH /api/users/:id/owner": ONE_USER,
  "POST /api/users/:id/revoke-subscription": ONE_USER,
  "GET /api/users/:id/usage": ONE_USER,
  "GET /api/users/:id/access": ONE_USER,
  "GET /api/users/:id/online": ONE_USER,
  "GET /api/users/:id/fair-use": ONE_USER,
  "POST /api/users/:id/renew": ONE_USER,
  "GET /api/plans": NO_USER,
  "GET /api/plans/:id": NO_USER,
  // A plan's change reaches every user it renews.
  "POST /api/plans": FLEET,
  "PUT /api/plans/:id": FLEET,
  "DELETE /api/plans/:id": FLEET,
  "GET /api/users/:id/devices": ONE_USER,
  "DELETE /api/users/:id/devices/:device_id": ONE_USER,
  "GET /api/users/:user_id/configs": ONE_USER_ID,
  "GET /api/users/:user_id/access/:inbound_id/config": ONE_USER_ID,

  "GET /api/groups/:id/members": OWNED,
  "POST /api/groups/:id/members": OWNED,
  "POST /api/groups/:id/members/remove": OWNED,
  "DELETE /api/groups/:id/members/:user_id": ONE_USER_ID,
  "POST /api/groups": FLEET,
  "PUT /api/groups/:id": FLEET,
  "DELETE /api/groups/:id": FLEET,
  "POST /api/groups/:id/inbounds": FLEET,
  "DELETE /api/groups/:id/inbounds/:inbound_id": FLEET,

  "POST /api/servers/:server_id/inbounds/:inbound_id/users": OWNED,
  "POST /api/servers/:server_id/inbounds/:inbound_id/users/bulk": OWNED,
  "DELETE /api/servers/:server_id/inbounds/:inbound_id/users/:email": OWNED,
  "GET /api/servers/:server_id/inbounds/:inbound_id/configs": FLEET,
  "GET /api/servers/:id/online": FLEET,
  // The core's traffic counters per user name every owner's users.
  "GET /api/servers/:id/stats": FLEET,
  // Fleet-wide totals, narrowed to the admin's own users in the handler (users.read's scope).
  "GET /api/overview": OWNED,
  "GET /api/usage": OWNED,
  // The core's log lines name the users who connect.
  "GET /api/servers/:id/node-log": FLEET,

  "GET /api/audit": FLEET,
  "GET /api/webhooks": FLEET,
  "POST /api/webhooks": FLEET,
  "GET /api/webhooks/:id": FLEET,
  "PUT /api/webhooks/:id": FLEET,
  "DELETE /api/webhooks/:id": FLEET,
  "GET /api/webhooks/:id/deliveries": FLEET,
  "POST /api/webhooks/:id/test": FLEET,
  // An import writes every owner's users (and reads them back in its report).
  "POST /api/import/uploads": FLEET,
  "POST /api/import/jobs": FLEET,
  "GET /api/import/job": FLEET,
};

/** The route's reach over users; throws for a user-acting route missing from the table. */
export function routeUserReach(method: string, url: string, permission: Permission): UserReach | undefined {
  const key = `${method === "HEAD" ? "GET" : method} ${url}`;
  const reach = ROUTE_USER_REACH[key];
  if (reach === undefined && isScopable(permission)) {
    throw new Error(
      `${key} acts on users (${permission}) but has no entry in ROUTE_USER_REACH (features/admins/permissions.ts)`,
    );
  }
  return reach;
}
