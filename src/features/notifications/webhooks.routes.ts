// /api/webhooks (owners: the URLs of some receivers carry their own secrets) and each admin's
// Telegram notifications at /api/auth/telegram.
import { Type } from "typebox";
import { type App, principalOf } from "../../lib/http.ts";
import { IdParams, PageQuery, problems } from "../../lib/schemas.ts";
import {
  CreatedWebhook,
  DeliveryPage,
  Queued,
  TelegramSettings,
  TelegramView,
  WebhookCreate,
  WebhookUpdate,
  WebhookView,
} from "./webhooks.schemas.ts";
import type { WebhooksService } from "./webhooks.service.ts";

export function webhooksRoutes(app: App, webhooks: WebhooksService): void {
  const tags = ["notifications"];
  app.get(
    "/api/webhooks",
    {
      schema: {
        tags,
        summary: "List webhooks",
        response: { 200: Type.Array(WebhookView), ...problems(403) },
      },
    },
    async () => webhooks.list(),
  );
  app.post(
    "/api/webhooks",
    {
      schema: {
        tags,
        summary: "Add a webhook: signed JSON POSTs for the events it filters",
        body: WebhookCreate,
        response: { 201: CreatedWebhook, ...problems(403, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await webhooks.create(request.body)),
  );
  app.get(
    "/api/webhooks/:id",
    {
      schema: {
        tags,
        summary: "One webhook",
        params: IdParams,
        response: { 200: WebhookView, ...problems(403, 404) },
      },
    },
    async (request) => webhooks.get(request.params.id),
  );
  app.put(
    "/api/webhooks/:id",
    {
      schema: {
        tags,
        summary: "Change a webhook's name, URL, secret, events or active flag",
        params: IdParams,
        body: WebhookUpdate,
        response: { 200: WebhookView, ...problems(403, 404, 409) },
      },
    },
    async (request) => webhooks.update(request.params.id, request.body),
  );
  app.delete(
    "/api/webhooks/:id",
    {
      schema: {
        tags,
        summary: "Delete a webhook and what was still waiting to be sent to it",
        params: IdParams,
        response: { 204: Type.Null(), ...problems(403, 404) },
      },
    },
    async (request, reply) => {
      await webhooks.delete(request.params.id);
      return reply.code(204).send(null);
    },
  );
  app.get(
    "/api/webhooks/:id/deliveries",
    {
      schema: {
        tags,
        summary: "The webhook's delivery log, newest first",
        params: IdParams,
        querystring: PageQuery,
        response: { 200: DeliveryPage, ...problems(403, 404) },
      },
    },
    async (request) => webhooks.deliveries(request.params.id, request.query.page, request.query.per_page),
  );
  app.post(
    "/api/webhooks/:id/test",
    {
      schema: {
        tags,
        summary: "Queue a webhook.test event for this webhook",
        params: IdParams,
        response: { 202: Queued, ...problems(403, 404) },
      },
    },
    async (request, reply) => reply.code(202).send(await webhooks.test(request.params.id)),
  );

  app.get(
    "/api/auth/telegram",
    {
      schema: {
        tags,
        summary: "Your Telegram notifications (the bot token is never shown)",
        response: { 200: Type.Union([TelegramView, Type.Null()]), ...problems() },
      },
    },
    async (request) => webhooks.telegram(principalOf(request).adminId),
  );
  app.put(
    "/api/auth/telegram",
    {
      schema: {
        tags,
        summary: "Send your lifecycle and server events to Telegram chats through your bot",
        body: TelegramSettings,
        response: { 200: TelegramView, ...problems() },
      },
    },
    async (request) => webhooks.saveTelegram(principalOf(request).adminId, request.body),
  );
  app.delete(
    "/api/auth/telegram",
    {
      schema: {
        tags,
        summary: "Stop your Telegram notifications",
        response: { 204: Type.Null(), ...problems() },
      },
    },
    async (request, reply) => {
      await webhooks.deleteTelegram(principalOf(request).adminId);
      return reply.code(204).send(null);
    },
  );
  app.post(
    "/api/auth/telegram/test",
    {
      schema: {
        tags,
        summary: "Queue a test message to your Telegram chats",
        response: { 202: Queued, ...problems() },
      },
    },
    async (request, reply) => reply.code(202).send(await webhooks.testTelegram(principalOf(request).adminId)),
  );
  app.get(
    "/api/auth/telegram/deliveries",
    {
      schema: {
        tags,
        summary: "Your Telegram delivery log",
        querystring: PageQuery,
        response: { 200: DeliveryPage, ...problems() },
      },
    },
    async (request) =>
      webhooks.telegramDeliveries(principalOf(request).adminId, request.query.page, request.query.per_page),
  );
}
