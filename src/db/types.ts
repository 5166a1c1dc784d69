// Table types for Kysely. Column types are what the drivers hand back before the row mappers in the
// repositories normalise them (booleans are 0/1 on SQLite, timestamps are Date on PostgreSQL).
import type { ColumnType, Generated } from "kysely";
import type { ServerStatus, SyncState } from "../domain/sync.ts";
import type { DataLimitReset, UserStatus } from "../domain/users.ts";

/** ISO string on SQLite, Date on PostgreSQL when read; always written as an ISO string. */
export type Timestamp = ColumnType<string | Date, string, string>;
/** 0/1 on SQLite, boolean on PostgreSQL. */
export type Bool = ColumnType<boolean | number, boolean, boolean>;
/** bigint columns come back as strings from pg. */
export type BigIntColumn = ColumnType<number | string, number, number>;

export interface AdminsTable {
  id: string;
  username: string;
  password_hash: string;
  /** owner | operator | support | viewer (lib/roles.ts) */
  role: ColumnType<string, string | undefined, string>;
  is_disabled: ColumnType<boolean | number, boolean | undefined, boolean>;
  /** Secret-box sealed base32 TOTP secret: set at enrolment, live once totp_enabled_at is set. */
  totp_secret_sealed: ColumnType<string | null, string | null | undefined, string | null>;
  totp_enabled_at: ColumnType<string | Date | null, string | null | undefined, string | null>;
  /** The last accepted 30-second step: a code is never accepted twice. */
  totp_last_step: ColumnType<number | string | null, number | null | undefined, number | null>;
  /** Migration 0031: JSON array of the permissions this admin holds for their own users only. */
  own_scope: ColumnType<string, string | undefined, string>;
  /** Quotas over the users the admin owns (null: none). */
  max_users: ColumnType<number | null, number | null | undefined, number | null>;
  max_data_bytes: BigIntColumn | null;
  /** JSON array of the group ids the admin may put users in (null: any group). */
  allowed_group_ids: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0033: JSON array of the plan ids the admin may use (null: any plan). */
  allowed_plan_ids: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AdminRecoveryCodesTable {
  id: string;
  admin_id: string;
  code_hash: string;
  created_at: Timestamp;
  used_at: Timestamp | null;
}

/** One state-changing call (migration 0009): inserted before it runs, its outcome after. */
export interface AuditLogTable {
  id: string;
  at: Timestamp;
  /** session | api_key | cli | anonymous (a login) */
  actor_kind: string;
  actor_id: string | null;
  actor_name: string;
  token_id: string | null;
  action: string;
  method: string | null;
  route: string | null;
  /** JSON object: path parameters and the created id */
  targets: string;
  /** JSON array of the body's field names (never values) */
  fields: string | null;
  ip: string | null;
  request_id: string | null;
  /** pending | succeeded | failed | interrupted */
  outcome: string;
  status: number | null;
  finished_at: Timestamp | null;
}

export interface AdminTokensTable {
  id: string;
  admin_id: string;
  kind: "session" | "api_key";
  name: string | null;
  token_hash: string;
  /** An API key narrowed to a role below its admin's; null: the admin's role. */
  role: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  expires_at: Timestamp | null;
  last_used_at: Timestamp | null;
}

export interface UsersTable {
  id: string;
  name: string;
  comment: string | null;
  telegram_id: BigIntColumn | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** The subscription URL's secret (migration 0014): 32 lowercase hex characters, unique. */
  sub_token: Generated<string>;
  /** Migration 0015: the lifecycle (features/users/lifecycle). */
  status: Generated<UserStatus>;
  data_limit_bytes: BigIntColumn | null;
  data_limit_reset: Generated<DataLimitReset>;
  used_bytes: ColumnType<number | string, number | undefined, number>;
  lifetime_used_bytes: ColumnType<number | string, number | undefined, number>;
  last_reset_at: Timestamp | null;
  expire_at: Timestamp | null;
  on_hold_duration_seconds: BigIntColumn | null;
  on_hold_timeout_at: Timestamp | null;
  online_at: Timestamp | null;
  sub_updated_at: Timestamp | null;
  sub_last_user_agent: string | null;
  /** Internal to the lifecycle job (migration 0015): when used_bytes starts over next. */
  next_reset_at: Timestamp | null;
  /** The highest usage threshold (percent) notified in the current period; 0: none. */
  notified_usage_percent: Generated<number>;
  /** The next usage threshold to look for (null: none left; 0: judge again). */
  next_notice_percent: ColumnType<number | null, number | null | undefined, number | null>;
  /** user.expiring was sent for the current expire_at. */
  expiring_notified_at: Timestamp | null;
  /** Migration 0023: the user's own Announce header (null: the subscription settings' one). */
  announce: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0021: when the subscription was revoked; from then on /sub/{user_id} is 404 for them. */
  sub_by_id_revoked_at: Timestamp | null;
  /** Migration 0027: distinct source addresses in the fair-use window (null: the default; 0: unlimited). */
  ip_limit: ColumnType<number | null, number | null | undefined, number | null>;
  /** Migration 0027: blocked by the fair-use job until then (not admitted to cores); null: not blocked. */
  fair_use_blocked_until: Timestamp | null;
  /** Migration 0031: the admin who owns the user (null: nobody; only `all`-scope admins see them). */
  owner_admin_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0030: the plan the lifecycle job applies once the user is limited or expired. */
  next_plan_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Migration 0032: devices (HWIDs) allowed at /sub fetch time (null: the default; 0: unlimited). */
  device_limit: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface SubscriptionSettingsTable {
  id: number;
  /** JSON of the settings (features/subscription-settings). */
  data: string;
  updated_at: Timestamp;
}

/** Migration 0027: the fair-use settings, one row (id 1) of JSON (features/fairuse). */
export interface FairUseSettingsTable {
  id: number;
  data: string;
  updated_at: Timestamp;
}

/** Migration 0027: the fair-use decision's state of a user ever warned or blocked. */
export interface FairUseStateTable {
  user_id: string;
  warned_at: Timestamp | null;
  strikes: ColumnType<number, number | undefined, number>;
  last_release_at: Timestamp | null;
  counted_from: Timestamp | null;
}

/** Migration 0027: every fair-use block, why and how it ended. */
export interface FairUseBlocksTable {
  id: string;
  user_id: string;
  started_at: Timestamp;
  until: Timestamp;
  ended_at: Timestamp | null;
  /** "ended" | "limit_lifted" */
  end_reason: string | null;
  strike: number;
  address_count: number;
  ip_limit: number;
  /** JSON array of the address keys counted. */
  addresses: string;
}

/** Migration 0032: a device (HWID) a user's app fetched /sub from, and what it said it runs on. */
export interface UserDevicesTable {
  id: string;
  user_id: string;
  hwid: string;
  app: string | null;
  os: string | null;
  os_version: string | null;
  model: string | null;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
}

export interface ServersTable {
  id: string;
  name: string;
  hostname: string;
  grpc_hostname: string;
  grpc_port: number;
  status: ServerStatus;
  default_certificate_id: string | null;
  api_credentials_sealed: string | null;
  core: "xray" | "v2ray" | null;
  core_version: string | null;
  /** A WireLayout (cores/wire-layout.ts); null until detected. */
  wire_layout: string | null;
  wire_layout_pinned: ColumnType<boolean | number, boolean | undefined, boolean>;
  /** JSON array of CoreCapability names; null until detected. */
  core_capabilities: string | null;
  last_error: string | null;
  last_seen_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Migration 0015: this server's bytes count × this towards a user's used_bytes. */
  usage_coefficient: Generated<number>;
  /** Migration 0020: a CoreConnection (cores/core-transport.ts). */
  connection: Generated<"direct" | "node">;
  /** JSON text of the node's base document; null = the default. */
  node_base_config: string | null;
  /** JSON text of the agent's last report (core flavor, version, uptime, restarts). */
  node_report: string | null;
  /** Migration 0024: when the status became offline (a trigger keeps it); null while not offline. */
  offline_since: Timestamp | null;
  /** Migration 0024: left out of /sub (offline longer than the setting's minutes; subscription-health job). */
  left_out_of_sub: ColumnType<boolean | number, boolean | undefined, boolean>;
}

/** Migration 0020: the panel CA and the panel's client certificate (one row, id 'panel'). */
export interface NodeAuthorityTable {
  id: string;
  ca_cert: string;
  ca_key_sealed: string;
  client_cert: string;
  client_key_sealed: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface NodeEnrollmentsTable {
  id: string;
  server_id: string;
  /** SHA-256 (hex) of the join token; the token itself is never stored. */
  token_hash: string;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_at: Timestamp;
}

export interface NodeCertificatesTable {
  /** SHA-256 (lowercase hex) of the agent certificate's DER. */
  fingerprint: string;
  server_id: string;
  serial: string;
  state: "current" | "pending";
  not_after: Timestamp;
  created_at: Timestamp;
}

export interface NodeTrafficReceiptsTable {
  server_id: string;
  epoch: string;
  seq: ColumnType<number, number, number>;
  received_at: Timestamp;
}

/** Collected traffic not yet added to the totals (migration 0034, TrafficRepository.fold). */
export interface TrafficJournalTable {
  seq: Generated<number | string>;
  server_id: string;
  collected_at: Timestamp;
  /** JSON: {"users": [[email, uplink, downlink], …], "inbounds": [[tag, uplink, downlink], …]}. */
  deltas: string;
}

export interface TemplatesTable {
  id: string;
  name: string;
  description: string;
  /** JSON text: the Xray-style inbound object with placeholders. */
  config: string;
  /** JSON text: [{name, description, default, required}]. */
  variables: string;
  client_flow: string;
  /** JSON text: ("xray" | "v2ray")[]. */
  supported_cores: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CertificatesTable {
  id: string;
  name: string;
  cert_type: "self_signed" | "publicca";
  /** generated (self-signed here), imported (PEM pair uploaded) or acme (issued by the CA). */
  origin: "generated" | "imported" | "acme";
  domain: string;
  auto_renew: Bool;
  /** Whether a certificate was ever obtained; the API's status is derived from this and the dates. */
  issuance: "pending" | "failed" | "issued";
  certificate_pem: string | null;
  /** Secret box output; the clear key never reaches the database. */
  private_key_sealed: string | null;
  not_before: Timestamp | null;
  not_after: Timestamp | null;
  issuer: string | null;
  /** JSON text: string[]. */
  subject_alt_names: string;
  fingerprint_sha256: string | null;
  serial: string | null;
  last_error: string | null;
  failure_count: number;
  last_attempt_at: Timestamp | null;
  /** Renewal lease: set while one renewal runs (see certificates.repository.ts). */
  renewing_since: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AcmeAccountsTable {
  id: string;
  directory_url: string;
  account_key_sealed: string;
  account_url: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ServerInboundsTable {
  id: string;
  server_id: string;
  template_id: string;
  tag: string;
  port: number;
  certificate_id: string | null;
  /** JSON text: {variable name: value}. */
  variable_values: string;
  /** Secret box output of the JSON of the inbound's generated secrets (REALITY keys, SS-2022 key). */
  secrets_sealed: string;
  /** JSON text: LinkParams, everything a share link needs except the user's credential. */
  link_params: string;
  is_active: Bool;
  sync_state: SyncState;
  sync_error: string | null;
  synced_at: Timestamp | null;
  uplink_bytes: ColumnType<number | string, number | undefined, number>;
  downlink_bytes: ColumnType<number | string, number | undefined, number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface UserAccessTable {
  id: string;
  user_id: string;
  server_inbound_id: string;
  /** Denormalised from the inbound, for per-server queries. */
  server_id: string;
  proxy_user_id: string;
  credential: string;
  level: number;
  is_active: Bool;
  sync_state: SyncState;
  sync_error: string | null;
  /** Bumped when the grant's core state goes out of date other than by a push (migration 0019). */
  sync_revision: ColumnType<number, number | undefined, number>;
  uplink_bytes: ColumnType<number | string, number | undefined, number>;
  downlink_bytes: ColumnType<number | string, number | undefined, number>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Given to the user directly (not only through a group); migration 0026. */
  is_own: ColumnType<boolean | number, boolean | undefined, boolean>;
}

/** Groups of inbounds (migration 0026); members' grants are user_access rows. */
export interface GroupsTable {
  id: string;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface GroupInboundsTable {
  group_id: string;
  server_inbound_id: string;
}

export interface UserGroupsTable {
  user_id: string;
  group_id: string;
}

/** Plans (migration 0030): what a user gets at creation or renewal (features/plans). */
export interface PlansTable {
  id: string;
  name: string;
  data_limit_bytes: BigIntColumn | null;
  data_limit_reset: ColumnType<DataLimitReset, DataLimitReset | undefined, DataLimitReset>;
  duration_days: number | null;
  start_on_hold: Bool;
  on_hold_timeout_days: number | null;
  ip_limit: number | null;
  /** Migration 0033: the user's device_limit (null: the settings' default; 0: unlimited). */
  device_limit: ColumnType<number | null, number | null | undefined, number | null>;
  /** expiry | now: where a renewal's duration is counted from. */
  renew_from: string;
  reset_usage: Bool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PlanGroupsTable {
  plan_id: string;
  group_id: string;
}

/** Removals that could not reach their core; email null means the whole inbound. */
export interface CoreRemovalsTable {
  id: string;
  server_id: string;
  inbound_tag: string;
  email: string | null;
  created_at: Timestamp;
}

/** What the reconciler knows about a server's core across processes (one row per server). */
export interface ServerSyncTable {
  server_id: string;
  /** When the core process that last received the full desired state started (now - uptime). */
  applied_core_started_at: Timestamp | null;
  /** POST /api/servers/{id}/sync on an instance that does not hold the server's lease. */
  full_sync_requested_at: Timestamp | null;
  /** The wire layout the last complete full reconcile used (migration 0010). */
  applied_wire_layout: string | null;
  last_reconciled_at: Timestamp | null;
  last_reconcile_error: string | null;
}

/** Which instance reconciles a server (PostgreSQL, several instances); renewed before it expires. */
export interface ServerLeasesTable {
  server_id: string;
  holder: string;
  expires_at: Timestamp;
}

/** Migration 0035: the instances alive on one PostgreSQL database (a heartbeat that expires). */
export interface PanelInstancesTable {
  name: string;
  expires_at: Timestamp;
}

/** An inbound's hosts (migration 0022): lists and objects as JSON text; null = the inbound's own value. */
export interface InboundHostsTable {
  id: string;
  server_inbound_id: string;
  position: number;
  address: string | null;
  port: number | null;
  remark: string | null;
  sni: string;
  host: string;
  path: string | null;
  alpn: string | null;
  fingerprint: string | null;
  security: "inbound" | "none" | "tls";
  allow_insecure: Bool;
  mux: string | null;
  fragment: string | null;
  noise: string | null;
  is_disabled: Bool;
  exclude_from: string;
  follows_health: Bool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The subscription change feed (migration 0008): written by triggers, read by every instance's cache. */
export interface SubscriptionChangesTable {
  seq: Generated<number | string>;
  /** PostgreSQL: the writing transaction's id; 0 on SQLite. */
  txid: Generated<number | string>;
  user_id: string | null;
  inbound_id: string | null;
  created_at: ColumnType<string | Date, string | undefined, string>;
}

/** Admin-configured webhooks (migration 0012); `events` is a JSON array of event types, [] = all. */
export interface WebhooksTable {
  id: string;
  name: string;
  url: string;
  secret_sealed: string;
  events: string;
  is_active: Bool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** An admin's Telegram notifications: their bot, chats, language and event filter. */
export interface AdminTelegramTable {
  admin_id: string;
  bot_token_sealed: string;
  chat_ids: string;
  language: string;
  events: string;
  updated_at: Timestamp;
}

export interface NotificationEventsTable {
  id: string;
  type: string;
  payload: string;
  created_at: Timestamp;
}

/** One event to one target (webhook or an admin's Telegram): pending → delivered | dead. */
export interface NotificationDeliveriesTable {
  id: string;
  event_id: string;
  target_kind: "webhook" | "telegram";
  target_id: string;
  status: "pending" | "delivered" | "dead";
  attempts: number;
  next_attempt_at: Timestamp;
  locked_until: Timestamp | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: Timestamp | null;
  created_at: Timestamp;
}

export interface RowCountsTable {
  table_name: string;
  n: BigIntColumn;
}

/** Usage history (migration 0016): one row per user, server and hour or UTC day. */
export interface UserUsageBucketsTable {
  user_id: string;
  server_id: string;
  bucket_start: Timestamp;
  uplink_bytes: BigIntColumn;
  downlink_bytes: BigIntColumn;
}

/** Usage history per server (migration 0016): the sum of its users' buckets. */
export interface ServerUsageBucketsTable {
  server_id: string;
  bucket_start: Timestamp;
  uplink_bytes: BigIntColumn;
  downlink_bytes: BigIntColumn;
}

/** Migration 0028: a peer panel's signing secret (features/import), secret-box sealed. */
export interface ImportSecretsTable {
  /** marzban (Marzban and PasarGuard) */
  source: string;
  secret_sealed: string;
  created_at: Timestamp;
}

/** Migration 0028: the user an old subscription URL names (Marzban username, lower case; 3x-ui subId). */
export interface ImportLinksTable {
  /** marzban | 3x-ui */
  source: string;
  key: string;
  user_id: string;
  /** Marzban's sub_revoked_at: tokens issued before it are void. */
  revoked_at: Timestamp | null;
}

export interface Database {
  row_counts: RowCountsTable;
  servers: ServersTable;
  admins: AdminsTable;
  admin_tokens: AdminTokensTable;
  admin_recovery_codes: AdminRecoveryCodesTable;
  audit_log: AuditLogTable;
  webhooks: WebhooksTable;
  admin_telegram: AdminTelegramTable;
  notification_events: NotificationEventsTable;
  notification_deliveries: NotificationDeliveriesTable;
  users: UsersTable;
  certificates: CertificatesTable;
  acme_accounts: AcmeAccountsTable;
  templates: TemplatesTable;
  server_inbounds: ServerInboundsTable;
  inbound_hosts: InboundHostsTable;
  user_access: UserAccessTable;
  groups: GroupsTable;
  group_inbounds: GroupInboundsTable;
  user_groups: UserGroupsTable;
  plans: PlansTable;
  plan_groups: PlanGroupsTable;
  core_removals: CoreRemovalsTable;
  server_sync: ServerSyncTable;
  server_leases: ServerLeasesTable;
  panel_instances: PanelInstancesTable;
  subscription_changes: SubscriptionChangesTable;
  subscription_settings: SubscriptionSettingsTable;
  fair_use_settings: FairUseSettingsTable;
  fair_use_state: FairUseStateTable;
  fair_use_blocks: FairUseBlocksTable;
  user_devices: UserDevicesTable;
  user_usage_hourly: UserUsageBucketsTable;
  user_usage_daily: UserUsageBucketsTable;
  server_usage_hourly: ServerUsageBucketsTable;
  server_usage_daily: ServerUsageBucketsTable;
  node_authority: NodeAuthorityTable;
  node_enrollments: NodeEnrollmentsTable;
  node_certificates: NodeCertificatesTable;
  node_traffic_receipts: NodeTrafficReceiptsTable;
  traffic_journal: TrafficJournalTable;
  import_secrets: ImportSecretsTable;
  import_links: ImportLinksTable;
}

export type { Generated };
