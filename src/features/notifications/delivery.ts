// Pure rules of delivery: the retry schedule, the webhook signature, and the Telegram message of an
// event in the admin's language.
import { createHmac } from "node:crypto";
import type { EventType, NotificationEvent } from "./events.ts";

/** Attempts before a delivery is given up (`dead`): with the schedule below, about a day and a half. */
export const MAX_ATTEMPTS = 12;
const FIRST_RETRY_MS = 15_000;
const MAX_RETRY_MS = 6 * 3_600_000;

/** Wait after the `attempts`-th failed attempt: 15 s, 30 s, 1 min … doubling, at most 6 h. */
export function retryDelayMs(attempts: number): number {
  return Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1));
}

/** `X-Portcullis-Signature: sha256=<hex>`: HMAC-SHA256 of `<timestamp>.<body>` with the webhook's secret. */
export function signature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

export const TELEGRAM_LANGUAGES = ["en", "ru", "fa", "zh"] as const;
export type TelegramLanguage = (typeof TELEGRAM_LANGUAGES)[number];

type Texts = Record<
  Exclude<
    EventType,
    | "user.created"
    | "user.updated"
    | "user.deleted"
    | "user.activated"
    | "user.usage_threshold"
    | "user.ip_released"
    | "user.plan_applied"
  >,
  (d: Data) => string
>;
type Data = Record<string, unknown>;

const name = (d: Data) => String((d.user as { name?: unknown } | undefined)?.name ?? d.name ?? "?");
const server = (d: Data) => String((d.server as { name?: unknown } | undefined)?.name ?? "?");
const status = (d: Data) => String((d.server as { status?: unknown } | undefined)?.status ?? "?");
const days = (d: Data) => String(d.days_left ?? "?");
const ips = (d: Data) => `${String(d.addresses ?? "?")}/${String(d.ip_limit ?? "?")}`;
const devices = (d: Data) => `${String(d.devices ?? "?")}/${String(d.device_limit ?? "?")}`;
const until = (d: Data) =>
  String(d.until ?? "?")
    .replace("T", " ")
    .slice(0, 16);

const MESSAGES: Record<TelegramLanguage, Texts> = {
  en: {
    "user.limited": (d) => `⛔ ${name(d)} reached their data limit.`,
    "user.expired": (d) => `⌛ ${name(d)} has expired.`,
    "user.expiring": (d) => `⏳ ${name(d)} expires in ${days(d)} day(s).`,
    "user.ip_limit_warning": (d) => `⚠️ ${name(d)} is connecting from ${ips(d)} addresses.`,
    "user.ip_blocked": (d) => `🚫 ${name(d)} is blocked until ${until(d)} UTC: ${ips(d)} addresses.`,
    "user.device_limit_reached": (d) => `📱 ${name(d)} has ${devices(d)} devices: a new device was refused.`,
    "server.status_changed": (d) => `🖥 Server ${server(d)} is now ${status(d)}.`,
    "webhook.test": () => "✅ Portcullis notifications reach this chat.",
  },
  ru: {
    "user.limited": (d) => `⛔ ${name(d)}: лимит трафика исчерпан.`,
    "user.expired": (d) => `⌛ ${name(d)}: срок действия истёк.`,
    "user.expiring": (d) => `⏳ ${name(d)}: срок действия истекает через ${days(d)} дн.`,
    "user.ip_limit_warning": (d) => `⚠️ ${name(d)}: подключения с ${ips(d)} адресов.`,
    "user.ip_blocked": (d) => `🚫 ${name(d)}: заблокирован до ${until(d)} UTC, адресов ${ips(d)}.`,
    "user.device_limit_reached": (d) =>
      `📱 ${name(d)}: устройств ${devices(d)}, новое устройство не допущено.`,
    "server.status_changed": (d) => `🖥 Сервер ${server(d)}: теперь ${status(d)}.`,
    "webhook.test": () => "✅ Уведомления Portcullis приходят в этот чат.",
  },
  fa: {
    "user.limited": (d) => `⛔ ${name(d)} به سقف حجم رسید.`,
    "user.expired": (d) => `⌛ اعتبار ${name(d)} تمام شد.`,
    "user.expiring": (d) => `⏳ اعتبار ${name(d)} تا ${days(d)} روز دیگر تمام می‌شود.`,
    "user.ip_limit_warning": (d) => `⚠️ ${name(d)} از ${ips(d)} نشانی وصل می‌شود.`,
    "user.ip_blocked": (d) => `🚫 ${name(d)} تا ${until(d)} UTC مسدود شد: ${ips(d)} نشانی.`,
    "user.device_limit_reached": (d) => `📱 ${name(d)} ${devices(d)} دستگاه دارد: دستگاه تازه پذیرفته نشد.`,
    "server.status_changed": (d) => `🖥 وضعیت سرور ${server(d)}: ${status(d)}.`,
    "webhook.test": () => "✅ اعلان‌های Portcullis به این گفتگو می‌رسد.",
  },
  zh: {
    "user.limited": (d) => `⛔ ${name(d)} 已达到流量上限。`,
    "user.expired": (d) => `⌛ ${name(d)} 已过期。`,
    "user.expiring": (d) => `⏳ ${name(d)} 将在 ${days(d)} 天后过期。`,
    "user.ip_limit_warning": (d) => `⚠️ ${name(d)} 正从 ${ips(d)} 个地址连接。`,
    "user.ip_blocked": (d) => `🚫 ${name(d)} 已被封禁至 ${until(d)} UTC：${ips(d)} 个地址。`,
    "user.device_limit_reached": (d) => `📱 ${name(d)} 已有 ${devices(d)} 台设备：新设备被拒绝。`,
    "server.status_changed": (d) => `🖥 服务器 ${server(d)} 当前状态：${status(d)}。`,
    "webhook.test": () => "✅ Portcullis 通知可以送达此聊天。",
  },
};

/** The message for an event a Telegram chat can subscribe to; undefined for the others. */
export function telegramText(event: NotificationEvent, language: string): string | undefined {
  const texts =
    MESSAGES[
      (TELEGRAM_LANGUAGES as readonly string[]).includes(language) ? (language as TelegramLanguage) : "en"
    ];
  const text = (texts as Partial<Record<EventType, (d: Data) => string>>)[event.type];
  return text?.(event.data);
}
