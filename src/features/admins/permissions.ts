// Which permission each protected route needs — one table, so a reviewer reads the whole policy in
// one place (the roles and their permissions are in lib/roles.ts). app.ts refuses to register a
// protected route missing from ROUTE_PERMISSIONS (a new route cannot forget its permission) and
// checks the caller's role against it on every request.
import type { Permission } from "../../lib/roles.ts";

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

  "GET /api/users": "users.read",
  "POST /api/users": "users.write",
  "POST /api/users/bulk": "users.write",
  "GET /api/users/search": "users.read",
  "GET /api/users/:id": "users.read",
  "PUT /api/users/:id": "users.write",
  "DELETE /api/users/:id": "users.write",
  "POST /api/users/:id/revoke-subscription": "users.write",
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
  "GET /api/servers/:id/online": "servers.read",
  "GET /api/users/:id/online": "users.read",
  "GET /api/users/:id/fair-use": "users.read",
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
};

export function routePermission(method: string, url: string): Permission | undefined {
  return ROUTE_PERMISSIONS[`${method === "HEAD" ? "GET" : method} ${url}`];
}
