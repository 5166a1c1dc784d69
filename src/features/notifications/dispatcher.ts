// Sending what the outbox holds: claim due deliveries, POST each webhook (signed) or send each
// Telegram message through the Bot API's sendMessage, record the outcome, and schedule a retry
// with backoff on failure until MAX_ATTEMPTS (then `dead`). Every request has a deadline; a
// webhook's redirects are not followed (the signed body goes only where the owner pointed it).
import type { Logger } from "pino";
import { limiter } from "../../lib/limiter.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import { MAX_ATTEMPTS, retryDelayMs, signature, telegramText } from "./delivery.ts";
import type { NotificationEvent } from "./events.ts";
import type { ClaimedDelivery, NotificationsRepository } from "./notifications.repository.ts";

const SEND_TIMEOUT_MS = 10_000;
/** A claim outlives a whole batch of sends; another instance takes the delivery over after it. */
const LOCK_MS = 60_000;
const BATCH = 50;

type Sent =
  | { ok: true; status: number }
  | { ok: false; status: number | null; error: string; retryAfterMs?: number };

export type DispatcherOptions = {
  telegramApiUrl: string;
  /** Told of every attempt (the metrics service: portcullis_notification_deliveries_total). */
  deliveries?: { recordDelivery(ok: boolean): void };
};

export class Dispatcher {
  readonly #limit = limiter(8);

  constructor(
    private readonly repo: NotificationsRepository,
    private readonly secretBox: SecretBox,
    private readonly logger: Logger,
    private readonly options: DispatcherOptions,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** One pass: everything due now, in batches; returns how many attempts were made. */
  async deliverDue(signal?: AbortSignal): Promise<number> {
    let attempts = 0;
    while (!signal?.aborted) {
      const now = this.now();
      const claimed = await this.repo.claimDue(
        now.toISOString(),
        new Date(now.getTime() + LOCK_MS).toISOString(),
        BATCH,
      );
      if (claimed.length === 0) break;
      // Targets in parallel; each target's deliveries one after another, oldest first.
      const byTarget = new Map<string, ClaimedDelivery[]>();
      for (const delivery of claimed) {
        const list = byTarget.get(delivery.targetId) ?? [];
        list.push(delivery);
        byTarget.set(delivery.targetId, list);
      }
      await Promise.all(
        [...byTarget.values()].map((list) =>
          this.#limit(async () => {
            for (const delivery of list) await this.#attempt(delivery);
          }),
        ),
      );
      attempts += claimed.length;
      if (claimed.length < BATCH) break;
    }
    return attempts;
  }

  /** Finished deliveries (and events left without any) older than `retentionMs` go. */
  prune(retentionMs: number): Promise<number> {
    return this.repo.prune(new Date(this.now().getTime() - retentionMs).toISOString());
  }

  async #attempt(delivery: ClaimedDelivery): Promise<void> {
    const sent = await this.#send(delivery).catch(
      (error: unknown): Sent => ({ ok: false, status: null, error: describe(error) }),
    );
    this.options.deliveries?.recordDelivery(sent.ok);
    const now = this.now();
    const attempts = delivery.attempts + 1;
    if (sent.ok) {
      await this.repo.recordAttempt(delivery.id, {
        status: "delivered",
        attempts,
        nextAttemptAt: now.toISOString(),
        lastStatus: sent.status,
        lastError: null,
        deliveredAt: now.toISOString(),
      });
      return;
    }
    const isDead = attempts >= MAX_ATTEMPTS;
    const waitMs = Math.max(sent.retryAfterMs ?? 0, retryDelayMs(attempts));
    await this.repo.recordAttempt(delivery.id, {
      status: isDead ? "dead" : "pending",
      attempts,
      nextAttemptAt: new Date(now.getTime() + waitMs).toISOString(),
      lastStatus: sent.status,
      lastError: sent.error,
      deliveredAt: null,
    });
    this.logger.warn(
      { delivery_id: delivery.id, target: delivery.targetKind, attempts, status: sent.status, dead: isDead },
      "notification not delivered",
    );
  }

  async #send(delivery: ClaimedDelivery): Promise<Sent> {
    const event = JSON.parse(delivery.payload) as NotificationEvent;
    return delivery.targetKind === "webhook"
      ? this.#sendWebhook(delivery, event)
      : this.#sendTelegram(delivery, event);
  }

  async #sendWebhook(delivery: ClaimedDelivery, event: NotificationEvent): Promise<Sent> {
    const webhook = await this.repo.getWebhook(delivery.targetId).catch(() => undefined);
    if (webhook === undefined) return { ok: false, status: null, error: "the webhook was deleted" };
    const body = JSON.stringify(event);
    const timestamp = String(Math.floor(this.now().getTime() / 1000));
    const response = await fetch(webhook.url, {
      method: "POST",
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      headers: {
        "content-type": "application/json",
        "user-agent": "Portcullis-Webhook/1",
        "x-portcullis-event": event.type,
        "x-portcullis-delivery": delivery.id,
        "x-portcullis-timestamp": timestamp,
        "x-portcullis-signature": signature(this.secretBox.open(webhook.secretSealed), timestamp, body),
      },
    });
    await response.body?.cancel();
    if (response.status >= 200 && response.status < 300) return { ok: true, status: response.status };
    return { ok: false, status: response.status, error: `the receiver answered ${response.status}` };
  }

  async #sendTelegram(delivery: ClaimedDelivery, event: NotificationEvent): Promise<Sent> {
    const settings = await this.repo.findTelegram(delivery.targetId);
    if (settings === undefined) return { ok: false, status: null, error: "Telegram is no longer set up" };
    const text = telegramText(event, settings.language);
    if (text === undefined) return { ok: true, status: 200 };
    const token = this.secretBox.open(settings.botTokenSealed);
    const url = `${this.options.telegramApiUrl.replace(/\/$/, "")}/bot${token}/sendMessage`;
    for (const chatId of settings.chatIds) {
      const response = await fetch(url, {
        method: "POST",
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chat_id: chatId, text, disable_web_page_preview: true }),
      });
      // The Bot API answers {ok, result} or {ok: false, error_code, description, parameters?}.
      const answer = (await response.json().catch(() => ({}))) as {
        ok?: boolean;
        description?: string;
        parameters?: { retry_after?: number };
      };
      if (!response.ok || answer.ok !== true) {
        const retryAfter = answer.parameters?.retry_after;
        return {
          ok: false,
          status: response.status,
          // The token is part of the URL: only Telegram's own description is kept, never the URL.
          error: `Telegram: ${String(answer.description ?? response.status).slice(0, 200)}`,
          ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter * 1000 }),
        };
      }
    }
    return { ok: true, status: 200 };
  }
}

/** A failed request, without its URL (a Telegram URL holds the bot token). */
function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string } }).cause?.code;
  if ((error as Error).name === "TimeoutError") return `no answer within ${SEND_TIMEOUT_MS / 1000} s`;
  return cause === undefined ? "the request failed" : `the request failed: ${cause}`;
}
