// The notification event types (the service's features/notifications/events.ts) for the pickers,
// checked against the OpenAPI document's enums: the type-check fails when the two drift apart.
import type { paths } from "./schema";
export const EVENT_TYPES = [
  "user.created",
  "user.updated",
  "user.deleted",
  "user.limited",
  "user.expired",
  "user.activated",
  "user.usage_threshold",
  "user.expiring",
  "user.ip_limit_warning",
  "user.ip_blocked",
  "user.ip_released",
  "user.device_limit_reached",
  "user.plan_applied",
  "server.status_changed",
  "webhook.test",
] as const;

/** What a Telegram chat may subscribe to. */
export const TELEGRAM_EVENT_TYPES = [
  "user.limited",
  "user.expired",
  "user.expiring",
  "user.ip_limit_warning",
  "user.ip_blocked",
  "user.device_limit_reached",
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
  "users.fair_use_block",
  "users.fair_use_release",
  "users.next_plan_applied",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];
export type TelegramEventType = (typeof TELEGRAM_EVENT_TYPES)[number];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type ApiEventType = NonNullable<
  paths["/api/webhooks"]["post"]["requestBody"]["content"]["application/json"]["events"]
>[number];
type ApiTelegramEventType = NonNullable<
  paths["/api/auth/telegram"]["put"]["requestBody"]["content"]["application/json"]["events"]
>[number];
export const EVENTS_MATCH_API: Same<ApiEventType, EventType> & Same<ApiTelegramEventType, TelegramEventType> =
  true;
