// Names for the shapes the pages use, taken from the generated schema (never written by hand).
import type { paths } from "./schema";

type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;
type Ok<P extends keyof paths, M extends "get" | "post" | "put"> = paths[P][M] extends {
  responses: infer R;
}
  ? R extends { 200: infer A }
    ? Json<A>
    : R extends { 201: infer C }
      ? Json<C>
      : never
  : never;
type Body<P extends keyof paths, M extends "post" | "put"> = paths[P][M] extends {
  requestBody?: { content: { "application/json": infer B } };
}
  ? B
  : never;

export type User = Ok<"/api/users/{id}", "get">;
export type UserPage = Ok<"/api/users", "get">;
export type UserInput = Body<"/api/users", "post">;
export type Access = Ok<"/api/users/{id}/access", "get">[number];
/** GET /api/users/{id}/usage answers the totals, or the history when asked with from, to and granularity. */
type UsageAnswer = Ok<"/api/users/{id}/usage", "get">;
export type Usage = Extract<UsageAnswer, { servers: unknown }>;
export type UsageSeries = Extract<UsageAnswer, { buckets: unknown }>;
export type FleetUsage = Ok<"/api/usage", "get">;
export type Server = Ok<"/api/servers/{id}", "get">;
export type Overview = Ok<"/api/overview", "get">;
export type AgentStatus = Ok<"/api/servers/{id}/node", "get">;
export type ServerInput = Body<"/api/servers", "post">;
export type ServerTest = Ok<"/api/servers/{id}/test", "post">;
export type ServerStats = Ok<"/api/servers/{id}/stats", "get">;
export type SyncReport = Ok<"/api/servers/{id}/sync", "post">;
export type Inbound = Ok<"/api/servers/{server_id}/inbounds/{inbound_id}", "get">;
export type InboundInput = Body<"/api/servers/{server_id}/inbounds", "post">;
export type Host = Ok<"/api/servers/{server_id}/inbounds/{inbound_id}/hosts/{host_id}", "get">;
export type HostInput = Body<"/api/servers/{server_id}/inbounds/{inbound_id}/hosts", "post">;
export type HostUpdate = Body<"/api/servers/{server_id}/inbounds/{inbound_id}/hosts/{host_id}", "put">;
export type BulkGrantReport = Ok<"/api/servers/{server_id}/inbounds/{inbound_id}/users/bulk", "post">;
export type Template = Ok<"/api/templates/{id}", "get">;
export type TemplateInput = Body<"/api/templates", "post">;
export type Certificate = Ok<"/api/certificates/{id}", "get">;
export type CertificateInput = Body<"/api/certificates", "post">;
export type ApiKey = Ok<"/api/api-keys", "get">[number];
export type CreatedApiKey = Ok<"/api/api-keys", "post">;
export type Me = Ok<"/api/auth/me", "get">;
export type Role = Me["role"];
export type TotpEnrolment = Ok<"/api/auth/totp/enroll", "post">;
export type Admin = Ok<"/api/admins/{id}", "get">;
export type AdminInput = Body<"/api/admins", "post">;
export type AdminUpdate = Body<"/api/admins/{id}", "put">;
export type AuditPage = Ok<"/api/audit", "get">;
export type AuditEntry = AuditPage["items"][number];
export type Webhook = Ok<"/api/webhooks/{id}", "get">;
export type CreatedWebhook = Ok<"/api/webhooks", "post">;
export type WebhookInput = Body<"/api/webhooks", "post">;
export type DeliveryPage = Ok<"/api/webhooks/{id}/deliveries", "get">;
export type Delivery = DeliveryPage["items"][number];
export type TelegramSettings = NonNullable<Ok<"/api/auth/telegram", "get">>;
export type TelegramInput = Body<"/api/auth/telegram", "put">;
export type SubscriptionSettings = Ok<"/api/subscription-settings", "get">;
export type SubscriptionSettingsUpdate = Body<"/api/subscription-settings", "put">;
export type UaRule = SubscriptionSettings["ua_rules"][number];
export type SubscriptionFormat = UaRule["format"];
export type UserUpdate = Body<"/api/users/{id}", "put">;
export type ServerUpdate = Body<"/api/servers/{id}", "put">;
export type InboundUpdate = Body<"/api/servers/{server_id}/inbounds/{inbound_id}", "put">;
export type TemplateUpdate = Body<"/api/templates/{id}", "put">;
export type CertificateUpdate = Body<"/api/certificates/{id}", "put">;
export type WebhookUpdate = Body<"/api/webhooks/{id}", "put">;
export type Group = Ok<"/api/groups/{id}", "get">;
export type GroupInput = Body<"/api/groups", "post">;
export type GroupUpdate = Body<"/api/groups/{id}", "put">;
export type GroupChange = Ok<"/api/groups/{id}/inbounds", "post">;
export type MembersChange = Ok<"/api/groups/{id}/members", "post">;
export type Plan = Ok<"/api/plans/{id}", "get">;
export type PlanInput = Body<"/api/plans", "post">;
export type PlanUpdate = Body<"/api/plans/{id}", "put">;
