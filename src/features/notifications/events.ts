// The events Portcullis tells webhooks and Telegram chats about, and the envelope every delivery
// carries. Payload shapes are documented in docs/NOTIFICATIONS.md.

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
  "user.plan_applied",
  "user.device_limit_reached",
  "server.status_changed",
  "webhook.test",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** What Telegram chats may subscribe to: the events a person wants on their phone. */
export const TELEGRAM_EVENT_TYPES = [
  "user.limited",
  "user.expired",
  "user.expiring",
  "user.ip_limit_warning",
  "user.ip_blocked",
  "user.device_limit_reached",
  "server.status_changed",
] as const satisfies readonly EventType[];

export type NotificationEvent = {
  /** Unique per event; a delivery id is unique per event and target. */
  id: string;
  type: EventType;
  created_at: string;
  data: Record<string, unknown>;
};

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** Whether a target whose filter is `events` ([] = everything) wants `type`. */
export function wants(events: readonly string[], type: EventType): boolean {
  return type === "webhook.test" || events.length === 0 || events.includes(type);
}
