// The audit log's `action` for a route: `<resource>.<verb>` read off the route, e.g.
// `POST /api/users` → `users.create`, `DELETE …/inbounds/:inbound_id/users/:email` → `access.revoke`,
// `POST /api/servers/:id/test` → `servers.test`. Pure.

/** Routes whose name the general rule would get wrong. */
const SPECIAL: Record<string, string> = {
  "POST /api/auth/token": "auth.login",
  "POST /api/auth/logout": "auth.logout",
  "POST /api/servers/:server_id/inbounds/:inbound_id/users": "access.grant",
  "POST /api/servers/:server_id/inbounds/:inbound_id/users/bulk": "access.grant_bulk",
  "DELETE /api/servers/:server_id/inbounds/:inbound_id/users/:email": "access.revoke",
  "POST /api/users/bulk-actions": "users.bulk_action",
  "POST /api/users/bulk": "users.bulk_create",
  "POST /api/templates/starters": "templates.install_starters",
  // Audited reads (audit-hooks.ts): who was handed a user's share links.
  "GET /api/users/:user_id/configs": "links.read",
  "GET /api/users/:user_id/access/:inbound_id/config": "links.read",
  "GET /api/users/:id/access": "links.read",
  "GET /api/servers/:server_id/inbounds/:inbound_id/configs": "links.read_inbound",
};

const VERBS: Record<string, string> = { POST: "create", PUT: "update", PATCH: "update", DELETE: "delete" };
/** Last path segments that are operations on the resource before them, not collections. */
const OPERATIONS = new Set([
  "test",
  "sync",
  "renew",
  "enroll",
  "confirm",
  "disable",
  "bulk",
  "revoke-subscription",
]);

export function actionOf(method: string, route: string): string {
  const special = SPECIAL[`${method} ${route}`];
  if (special !== undefined) return special;
  const names = route
    .replace(/^\/api\//, "")
    .split("/")
    .filter((s) => !s.startsWith(":"));
  const last = names.at(-1) ?? "";
  if (OPERATIONS.has(last)) return `${names.at(-2) ?? "api"}.${last}`.replace(/-/g, "_");
  return `${last}.${VERBS[method] ?? method.toLowerCase()}`.replace(/-/g, "_");
}
