// The notification event types (the service's features/notifications/events.ts). The OpenAPI
// document names them only in a description, so the pickers keep this copy.
export const EVENT_TYPES = [
  "user.created",
  "user.updated",
  "user.deleted",
  "user.limited",
  "user.expired",
  "user.activated",
  "user.usage_threshold",
  "user.expiring",
  "server.status_changed",
  "webhook.test",
] as const;

/** What a Telegram chat may subscribe to. */
export const TELEGRAM_EVENT_TYPES = [
  "user.limited",
  "user.expired",
  "user.expiring",
  "server.status_changed",
] as const;

/** Audit actions offered in the audit log's filter (any other `resource.verb` may be typed). */
export const AUDIT_ACTIONS = [
  "auth.login",
  "auth.logout",
  "totp.enroll",
  "totp.confirm",
  "totp.disable",
  "api_keys.create",
  "api_keys.delete",
  "admins.create",
  "admins.update",
  "admins.delete",
  "users.create",
  "users.update",
  "users.delete",
  "access.grant",
  "access.grant_bulk",
  "access.revoke",
  "servers.create",
  "servers.update",
  "servers.delete",
  "servers.test",
  "servers.sync",
  "inbounds.create",
  "inbounds.update",
  "inbounds.delete",
  "templates.create",
  "templates.update",
  "templates.delete",
  "certificates.create",
  "certificates.update",
  "certificates.delete",
  "certificates.renew",
  "webhooks.create",
  "webhooks.update",
  "webhooks.delete",
  "webhooks.test",
  "telegram.update",
  "telegram.delete",
  "telegram.test",
] as const;
