// /api/webhooks and the Telegram settings: request and response shapes. Secrets (the webhook's
// signing secret, the bot token) are write-only, except a generated secret in its create answer.
import { type Static, Type } from "typebox";
import { Page, Timestamp, Uuid } from "../../lib/schemas.ts";
import { EVENT_TYPES, type EventType, TELEGRAM_EVENT_TYPES } from "./events.ts";

const EventName = Type.Unsafe<EventType>({ type: "string", enum: [...EVENT_TYPES] });
const TelegramEventName = Type.Unsafe<EventType>({ type: "string", enum: [...TELEGRAM_EVENT_TYPES] });
const Url = Type.String({
  minLength: 8,
  maxLength: 2048,
  pattern: "^https?://",
  description: "http:// or https://",
});

export const WebhookView = Type.Object({
  id: Uuid,
  name: Type.String(),
  url: Type.String(),
  events: Type.Array(EventName, { description: "event types it receives; [] = all" }),
  is_active: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type WebhookView = Static<typeof WebhookView>;

export const CreatedWebhook = Type.Object({
  ...WebhookView.properties,
  secret: Type.Union([Type.String(), Type.Null()], {
    description: "the generated signing secret, in this answer only; null when one was given",
  }),
});

export const WebhookCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128, format: "line" }),
    url: Url,
    secret: Type.Optional(
      Type.String({ minLength: 16, maxLength: 256, description: "generated when absent" }),
    ),
    events: Type.Optional(Type.Array(EventName, { maxItems: 32, uniqueItems: true })),
    is_active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type WebhookCreate = Static<typeof WebhookCreate>;

export const WebhookUpdate = Type.Partial(WebhookCreate, { additionalProperties: false });
export type WebhookUpdate = Static<typeof WebhookUpdate>;

export const DeliveryView = Type.Object({
  id: Uuid,
  event_id: Uuid,
  event_type: Type.String(),
  status: Type.String({ description: "pending | delivered | dead" }),
  attempts: Type.Integer(),
  next_attempt_at: Timestamp,
  last_status: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  delivered_at: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
});
export const DeliveryPage = Page(DeliveryView);
export const Queued = Type.Object({ event_id: Uuid, delivery_id: Uuid });

export const TelegramView = Type.Object({
  chat_ids: Type.Array(Type.String()),
  language: Type.String(),
  events: Type.Array(TelegramEventName),
  updated_at: Timestamp,
});
export const TelegramSettings = Type.Object(
  {
    bot_token: Type.Optional(
      Type.String({
        pattern: "^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$",
        description: "from @BotFather; leave it out to keep the stored one",
      }),
    ),
    chat_ids: Type.Array(Type.String({ pattern: "^-?[0-9]{1,20}$|^@[A-Za-z0-9_]{5,64}$" }), {
      minItems: 1,
      maxItems: 10,
    }),
    language: Type.Optional(
      Type.Union([Type.Literal("en"), Type.Literal("ru"), Type.Literal("fa"), Type.Literal("zh")]),
    ),
    events: Type.Optional(Type.Array(TelegramEventName, { maxItems: 8, uniqueItems: true })),
  },
  { additionalProperties: false },
);
export type TelegramSettings = Static<typeof TelegramSettings>;
