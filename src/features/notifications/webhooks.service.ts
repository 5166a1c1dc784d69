// Webhooks as owners manage them (signing secrets sealed, shown once when generated), their delivery
// log and a test ping; and each admin's own Telegram settings (bot token sealed, never shown again).
import { randomBytes, randomUUID } from "node:crypto";
import { ValidationError } from "../../lib/errors.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import { isEventType, TELEGRAM_EVENT_TYPES } from "./events.ts";
import type {
  DeliveryRow,
  NotificationsRepository,
  TelegramRow,
  WebhookRow,
} from "./notifications.repository.ts";
import type { Notifier } from "./notifier.ts";
import type { TelegramSettings, WebhookCreate, WebhookUpdate, WebhookView } from "./webhooks.schemas.ts";

export class WebhooksService {
  constructor(
    private readonly repo: NotificationsRepository,
    private readonly notifier: Notifier,
    private readonly secretBox: SecretBox,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(): Promise<WebhookView[]> {
    return (await this.repo.listWebhooks()).map(toView);
  }

  async get(id: string): Promise<WebhookView> {
    return toView(await this.repo.getWebhook(id));
  }

  async create(input: WebhookCreate): Promise<WebhookView & { secret: string | null }> {
    const secret = input.secret ?? randomBytes(32).toString("base64url");
    const now = this.now().toISOString();
    const row: WebhookRow = {
      id: randomUUID(),
      name: input.name.trim(),
      url: checkUrl(input.url),
      secretSealed: this.secretBox.seal(secret),
      events: checkEvents(input.events ?? [], "body.events"),
      isActive: input.is_active ?? true,
      createdAt: now,
      updatedAt: now,
    };
    await this.repo.insertWebhook(row);
    return { ...toView(row), secret: input.secret === undefined ? secret : null };
  }

  async update(id: string, input: WebhookUpdate): Promise<WebhookView> {
    const current = await this.repo.getWebhook(id);
    const row: WebhookRow = {
      ...current,
      ...(input.name === undefined ? {} : { name: input.name.trim() }),
      ...(input.url === undefined ? {} : { url: checkUrl(input.url) }),
      ...(input.secret === undefined ? {} : { secretSealed: this.secretBox.seal(input.secret) }),
      ...(input.events === undefined ? {} : { events: checkEvents(input.events, "body.events") }),
      ...(input.is_active === undefined ? {} : { isActive: input.is_active }),
      updatedAt: this.now().toISOString(),
    };
    await this.repo.updateWebhook(row);
    return toView(row);
  }

  async delete(id: string): Promise<void> {
    await this.repo.getWebhook(id);
    await this.repo.deleteWebhook(id);
  }

  async deliveries(id: string, page: number, perPage: number) {
    await this.repo.getWebhook(id);
    return this.#deliveries(id, page, perPage);
  }

  /** Queues a `webhook.test` event for this webhook only; the delivery log shows how it went. */
  async test(id: string): Promise<{ event_id: string; delivery_id: string }> {
    const webhook = await this.repo.getWebhook(id);
    return this.notifier.emitTo("webhook", id, { webhook: { id, name: webhook.name } });
  }

  async telegram(adminId: string) {
    const row = await this.repo.findTelegram(adminId);
    return row === undefined ? null : telegramView(row);
  }

  async saveTelegram(adminId: string, input: TelegramSettings) {
    const events = input.events ?? [...TELEGRAM_EVENT_TYPES];
    const bad = events.filter((e) => !(TELEGRAM_EVENT_TYPES as readonly string[]).includes(e));
    if (bad.length > 0) {
      throw new ValidationError(`Telegram cannot receive ${bad.join(", ")}`, [
        { path: "body.events", message: `each must be one of ${TELEGRAM_EVENT_TYPES.join(", ")}` },
      ]);
    }
    const current = await this.repo.findTelegram(adminId);
    if (input.bot_token === undefined && current === undefined) {
      throw new ValidationError("the first setup needs the bot token", [
        { path: "body.bot_token", message: "is required the first time" },
      ]);
    }
    const row: TelegramRow = {
      adminId,
      botTokenSealed:
        input.bot_token === undefined
          ? (current?.botTokenSealed ?? "")
          : this.secretBox.seal(input.bot_token),
      chatIds: input.chat_ids,
      language: input.language ?? "en",
      events,
      updatedAt: this.now().toISOString(),
    };
    await this.repo.saveTelegram(row);
    return telegramView(row);
  }

  async deleteTelegram(adminId: string): Promise<void> {
    await this.repo.deleteTelegram(adminId);
  }

  async testTelegram(adminId: string) {
    if ((await this.repo.findTelegram(adminId)) === undefined) {
      throw new ValidationError("set up Telegram first (PUT /api/auth/telegram)");
    }
    return this.notifier.emitTo("telegram", adminId, {});
  }

  async telegramDeliveries(adminId: string, page: number, perPage: number) {
    return this.#deliveries(adminId, page, perPage);
  }

  async #deliveries(targetId: string, page: number, perPage: number) {
    const { items, total } = await this.repo.listDeliveries(targetId, page, perPage);
    return { items: items.map(deliveryView), total, page, per_page: perPage };
  }
}

function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError("url is not a URL", [{ path: "body.url", message: "must be an http(s) URL" }]);
  }
  if (parsed.username !== "" || parsed.password !== "") {
    throw new ValidationError("url must not carry credentials", [
      { path: "body.url", message: "put no user:password in the URL; the signature authenticates" },
    ]);
  }
  return parsed.toString();
}

function checkEvents(events: string[], path: string): string[] {
  const bad = events.filter((e) => !isEventType(e));
  if (bad.length > 0) {
    throw new ValidationError(`unknown event types: ${bad.join(", ")}`, [
      { path, message: "unknown event type" },
    ]);
  }
  return events;
}

function toView(row: WebhookRow): WebhookView {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    events: row.events.filter(isEventType),
    is_active: row.isActive,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

function telegramView(row: TelegramRow) {
  return {
    chat_ids: row.chatIds,
    language: row.language,
    events: row.events.filter(isEventType),
    updated_at: row.updatedAt,
  };
}

function deliveryView(row: DeliveryRow & { eventType: string }) {
  return {
    id: row.id,
    event_id: row.eventId,
    event_type: row.eventType,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.nextAttemptAt,
    last_status: row.lastStatus,
    last_error: row.lastError,
    delivered_at: row.deliveredAt,
    created_at: row.createdAt,
  };
}
