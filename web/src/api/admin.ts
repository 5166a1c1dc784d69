// The owners' resources and the signed-in admin's own: admins, API keys, two-factor, Telegram,
// webhooks, the audit log, subscription settings. Queries from keys.ts, and the calls.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, byId, unwrap } from "./client.ts";
import { keys } from "./keys.ts";
import type { paths } from "./schema";
import type {
  AdminInput,
  AdminUpdate,
  DeliveryPage,
  SubscriptionSettingsUpdate,
  TelegramInput,
  WebhookInput,
  WebhookUpdate,
} from "./types.ts";

export type AuditQuery = NonNullable<paths["/api/audit"]["get"]["parameters"]["query"]>;
type ApiKeyInput = NonNullable<paths["/api/api-keys"]["post"]["requestBody"]>["content"]["application/json"];
type TotpDisable = NonNullable<
  paths["/api/auth/totp/disable"]["post"]["requestBody"]
>["content"]["application/json"];

export const adminsQuery = {
  queryKey: keys.admins.all,
  queryFn: () => unwrap(api.GET("/api/admins")),
} as const;

export function useAdmins(enabled = true) {
  return useQuery({ ...adminsQuery, enabled });
}

export const adminsApi = {
  create: (body: AdminInput) => unwrap(api.POST("/api/admins", { body })),
  update: (id: string, body: AdminUpdate) => unwrap(api.PUT("/api/admins/{id}", { ...byId(id), body })),
  remove: (id: string) => unwrap(api.DELETE("/api/admins/{id}", byId(id))),
};

export function useApiKeys() {
  return useQuery({ queryKey: keys.apiKeys.all, queryFn: () => unwrap(api.GET("/api/api-keys")) });
}

export const accountApi = {
  signIn: (
    body: NonNullable<paths["/api/auth/token"]["post"]["requestBody"]>["content"]["application/json"],
  ) => unwrap(api.POST("/api/auth/token", { body })),
  signOut: () => unwrap(api.POST("/api/auth/logout")),
  createKey: (body: ApiKeyInput) => unwrap(api.POST("/api/api-keys", { body })),
  removeKey: (id: string) => unwrap(api.DELETE("/api/api-keys/{id}", byId(id))),
  enrolTotp: () => unwrap(api.POST("/api/auth/totp/enroll")),
  confirmTotp: (code: string) => unwrap(api.POST("/api/auth/totp/confirm", { body: { code } })),
  disableTotp: (body: TotpDisable) => unwrap(api.POST("/api/auth/totp/disable", { body })),
};

export function useTelegram() {
  return useQuery({ queryKey: keys.telegram.all, queryFn: () => unwrap(api.GET("/api/auth/telegram")) });
}

export const telegramApi = {
  save: (body: TelegramInput) => unwrap(api.PUT("/api/auth/telegram", { body })),
  stop: () => unwrap(api.DELETE("/api/auth/telegram")),
  test: () => unwrap(api.POST("/api/auth/telegram/test")),
  deliveries: (page: number, perPage: number): Promise<DeliveryPage> =>
    unwrap(api.GET("/api/auth/telegram/deliveries", { params: { query: { page, per_page: perPage } } })),
};

export function useWebhooks() {
  return useQuery({ queryKey: keys.webhooks.all, queryFn: () => unwrap(api.GET("/api/webhooks")) });
}

export function useWebhook(id: string) {
  return useQuery({
    queryKey: keys.webhooks.one(id),
    queryFn: () => unwrap(api.GET("/api/webhooks/{id}", byId(id))),
  });
}

export const webhooksApi = {
  create: (body: WebhookInput) => unwrap(api.POST("/api/webhooks", { body })),
  update: (id: string, body: WebhookUpdate) => unwrap(api.PUT("/api/webhooks/{id}", { ...byId(id), body })),
  remove: (id: string) => unwrap(api.DELETE("/api/webhooks/{id}", byId(id))),
  test: (id: string) => unwrap(api.POST("/api/webhooks/{id}/test", byId(id))),
  deliveries: (id: string, page: number, perPage: number): Promise<DeliveryPage> =>
    unwrap(
      api.GET("/api/webhooks/{id}/deliveries", {
        params: { path: { id }, query: { page, per_page: perPage } },
      }),
    ),
};

export function useAudit(query: AuditQuery) {
  return useQuery({
    queryKey: keys.audit(query),
    queryFn: ({ signal }) => unwrap(api.GET("/api/audit", { params: { query }, signal })),
    placeholderData: keepPreviousData,
  });
}

export function useSubscriptionSettings() {
  return useQuery({
    queryKey: keys.subscriptionSettings,
    queryFn: () => unwrap(api.GET("/api/subscription-settings")),
  });
}

export const settingsApi = {
  save: (body: SubscriptionSettingsUpdate) => unwrap(api.PUT("/api/subscription-settings", { body })),
};
