// The user resource of the seed (name, optional comment and telegram_id) and its lifecycle (issue 12:
// status, data limit and period, expiry, on-hold, what was last seen).
import { type Static, Type } from "typebox";
import { DATA_LIMIT_RESETS, USER_STATUSES } from "../../domain/users.ts";
import { Literals, Timestamp, Uuid } from "../../lib/schemas.ts";

const Name = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: "\\S",
  format: "line",
  description: "1-128 characters, trimmed; one line: no control characters, line breaks or bidi overrides",
});
const Comment = Type.Union([Type.String({ maxLength: 1000, format: "text" }), Type.Null()]);
const Announce = Type.Union([Type.String({ maxLength: 500, format: "text" }), Type.Null()], {
  description:
    "the user's own Announce header (Happ, v2RayTun; sent as base64:), instead of the subscription settings' announce; null: theirs",
});
const IpLimit = Type.Union([Type.Integer({ minimum: 0, maximum: 1000 }), Type.Null()], {
  description:
    "distinct source addresses allowed within the fair-use window (docs/FAIR-USE.md); null: the settings' default_ip_limit; 0: unlimited",
});
const NextPlanId = Type.Union([Uuid, Type.Null()], {
  description:
    "the plan (GET /api/plans) the lifecycle job applies once, when the user is limited or expired; then null again (docs/PLANS.md). null: none",
});
const DeviceLimit = Type.Union([Type.Integer({ minimum: 0, maximum: 1000 }), Type.Null()], {
  description:
    "devices (HWIDs) whose apps get the links when they fetch /sub (docs/FAIR-USE.md); null: the subscription settings' default_device_limit; 0: unlimited",
});
const TelegramId = Type.Union([Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()]);

const Bytes = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

export const UserStatus = Literals(USER_STATUSES, {
  description:
    "active: on the cores. disabled: set by an admin. limited: used_bytes reached data_limit_bytes. expired: expire_at passed. on_hold: waiting for first traffic or on_hold_timeout_at; then active, with expire_at = that moment + on_hold_duration_seconds. Only active and on_hold users have credentials on the cores (on_hold: their first traffic starts the clock)",
});

/** What an admin may set; limited and expired follow from the numbers. */
export const SettableStatus = Type.Union(
  [Type.Literal("active"), Type.Literal("disabled"), Type.Literal("on_hold")],
  {
    description:
      "active, disabled or on_hold (on_hold needs on_hold_duration_seconds). A user set active whose limit is reached or whose expiry has passed is limited or expired at once",
  },
);

export const DataLimitReset = Literals(DATA_LIMIT_RESETS, {
  description:
    "when used_bytes starts over: never, at 00:00 UTC each day, Monday each week, the 1st of each month, each month on the day of the user's last reset (or creation), 1 January",
});

const DataLimit = Type.Union([Bytes, Type.Null()], { description: "bytes per period; null = unlimited" });
const ExpireAt = Type.Union([Timestamp, Type.Null()], { description: "null = never" });
const OnHoldDuration = Type.Union([Type.Integer({ minimum: 1, maximum: 100 * 366 * 86_400 }), Type.Null()], {
  description: "on_hold: seconds of access counted from the first traffic (or on_hold_timeout_at)",
});
const OnHoldTimeout = Type.Union([Timestamp, Type.Null()], {
  description:
    "on_hold: the clock starts at this moment if no traffic came first; null = only at first traffic",
});

/** The lifecycle fields a create or update may carry (all optional). */
const LifecycleInput = {
  status: Type.Optional(SettableStatus),
  data_limit_bytes: Type.Optional(DataLimit),
  data_limit_reset: Type.Optional(DataLimitReset),
  expire_at: Type.Optional(ExpireAt),
  on_hold_duration_seconds: Type.Optional(OnHoldDuration),
  on_hold_timeout_at: Type.Optional(OnHoldTimeout),
};

export const User = Type.Object({
  id: Uuid,
  name: Type.String(),
  comment: Type.Union([Type.String(), Type.Null()]),
  announce: Type.Union([Type.String(), Type.Null()]),
  ip_limit: Type.Union([Type.Integer(), Type.Null()]),
  device_limit: Type.Union([Type.Integer(), Type.Null()]),
  fair_use_blocked_until: Type.Union([Timestamp, Type.Null()], {
    description: "blocked by the IP limit until then (credentials off every core); null: not blocked",
  }),
  telegram_id: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  subscription_url: Type.String({
    description:
      "the user's subscription URL: /sub/{sub_token}, absolute when public_url is set in /api/subscription-settings; a credential (POST /api/users/{id}/revoke-subscription replaces it)",
  }),
  status: UserStatus,
  data_limit_bytes: DataLimit,
  data_limit_reset: DataLimitReset,
  used_bytes: Type.Integer({
    description: "traffic in the current period, each server's bytes × its usage_coefficient",
  }),
  lifetime_used_bytes: Type.Integer({ description: "traffic over every period (× coefficient)" }),
  last_reset_at: Type.Union([Timestamp, Type.Null()], { description: "when used_bytes last started over" }),
  expire_at: ExpireAt,
  on_hold_duration_seconds: OnHoldDuration,
  on_hold_timeout_at: OnHoldTimeout,
  online_at: Type.Union([Timestamp, Type.Null()], {
    description: "the last traffic collection that saw this user's traffic",
  }),
  sub_updated_at: Type.Union([Timestamp, Type.Null()], {
    description: "the last /sub fetch (written in batches: up to a few seconds late)",
  }),
  sub_last_user_agent: Type.Union([Type.String(), Type.Null()], {
    description: "User-Agent of the last /sub fetch",
  }),
  owner_admin_id: Type.Union([Uuid, Type.Null()], {
    description:
      "the admin who owns the user (who created them, or whom an owner moved them to); null: nobody, seen only by admins whose scope is all (docs/RESELLERS.md)",
  }),
  next_plan_id: NextPlanId,
  group_ids: Type.Optional(
    Type.Array(Uuid, {
      description:
        "the groups the user belongs to, by name (docs/GROUPS.md); on the user routes of /api/users, not in webhook payloads",
    }),
  ),
});
export type User = Static<typeof User>;

export const UserCreate = Type.Object(
  {
    name: Name,
    comment: Type.Optional(Comment),
    announce: Type.Optional(Announce),
    ip_limit: Type.Optional(IpLimit),
    device_limit: Type.Optional(DeviceLimit),
    telegram_id: Type.Optional(TelegramId),
    next_plan_id: Type.Optional(NextPlanId),
    ...LifecycleInput,
  },
  { additionalProperties: false },
);
export type UserCreate = Static<typeof UserCreate>;

const InboundIds = Type.Array(Uuid, {
  maxItems: 100,
  description:
    "inbounds (server_inbounds ids, any server) to grant at once; every one is checked before anything is created, and if a grant fails the new user is deleted again (all or nothing). Needs access.write too",
});

const GroupIds = Type.Array(Uuid, {
  maxItems: 100,
  uniqueItems: true,
  description:
    "the groups the user belongs to (their inbounds are granted as the user joins, revoked as the user leaves unless held otherwise); on update the whole new set. Needs access.write too",
});

const PlanId = Type.String({
  format: "uuid",
  description:
    "create the user from this plan (GET /api/plans): its data limit, period, duration (or on-hold start), IP and device limits and groups. The plan decides those fields: giving status, data_limit_bytes, data_limit_reset, expire_at, on_hold_duration_seconds, on_hold_timeout_at, ip_limit, device_limit or group_ids as well is 400 (docs/PLANS.md)",
});

const BulkPlanId = Type.String({
  format: "uuid",
  description:
    "create every user from this plan (GET /api/plans): its data limit, period, duration (or on-hold start), IP and device limits and groups; giving status, data_limit_bytes, data_limit_reset, expire_at, on_hold_duration_seconds or on_hold_timeout_at as well is 400 (docs/PLANS.md)",
});

/** POST /api/users: the seed's fields, the lifecycle, and optionally the inbounds and groups, or a plan. */
export const UserCreateRequest = Type.Object(
  {
    ...UserCreate.properties,
    inbound_ids: Type.Optional(InboundIds),
    group_ids: Type.Optional(GroupIds),
    plan_id: Type.Optional(PlanId),
  },
  { additionalProperties: false },
);
export type UserCreateRequest = Static<typeof UserCreateRequest>;

export const MAX_BULK_USERS = 1000;

export const BulkUserCreate = Type.Object(
  {
    prefix: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: "\\S",
      format: "line",
      description:
        "one line (no control characters, line breaks or bidi overrides); names are the prefix and a number, zero-padded to the width of the last: shop-001 … shop-100",
    }),
    count: Type.Integer({
      minimum: 1,
      maximum: MAX_BULK_USERS,
      description: `how many users (1-${MAX_BULK_USERS})`,
    }),
    start: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000_000,
        default: 1,
        description: "the first number (default 1)",
      }),
    ),
    comment: Type.Optional(Comment),
    ...LifecycleInput,
    next_plan_id: Type.Optional(NextPlanId),
    inbound_ids: Type.Optional(InboundIds),
    plan_id: Type.Optional(BulkPlanId),
  },
  { additionalProperties: false },
);
export type BulkUserCreate = Static<typeof BulkUserCreate>;

export const BulkUserResult = Type.Object({
  created: Type.Integer({ description: "users created" }),
  users: Type.Array(Type.Object({ id: Uuid, name: Type.String() }), { description: "in number order" }),
  grants: Type.Array(
    Type.Object({
      server_inbound_id: Uuid,
      granted: Type.Integer(),
      sync: Type.Object({ synced: Type.Integer(), pending: Type.Integer(), error: Type.Integer() }),
    }),
    { description: "one per inbound asked for: how many grants were stored and how they synced" },
  ),
});
export type BulkUserResult = Static<typeof BulkUserResult>;

export const UserUpdate = Type.Object(
  {
    name: Type.Optional(Name),
    comment: Type.Optional(Comment),
    announce: Type.Optional(Announce),
    ip_limit: Type.Optional(IpLimit),
    device_limit: Type.Optional(DeviceLimit),
    telegram_id: Type.Optional(TelegramId),
    next_plan_id: Type.Optional(NextPlanId),
    ...LifecycleInput,
  },
  { additionalProperties: false },
);
export type UserUpdate = Static<typeof UserUpdate>;

/** PUT /api/users/{id}: the fields, and optionally the whole set of groups. */
export const UserUpdateRequest = Type.Object(
  { ...UserUpdate.properties, group_ids: Type.Optional(GroupIds) },
  { additionalProperties: false },
);
export type UserUpdateRequest = Static<typeof UserUpdateRequest>;

/** POST /api/users/{id}/renew. */
export const RenewRequest = Type.Object(
  {
    plan_id: Type.String({ format: "uuid", description: "the plan to renew the user with (GET /api/plans)" }),
  },
  { additionalProperties: false },
);

export const SearchQuery = Type.Object(
  {
    q: Type.String({ minLength: 1, maxLength: 128, description: "name substring, telegram_id or user uuid" }),
  },
  { additionalProperties: false },
);

const STATUS_NAMES = "(active|disabled|limited|expired|on_hold)";
const UsedOverPercent = Type.Integer({
  minimum: 0,
  maximum: 1000,
  description:
    "users with a data limit whose used_bytes is at least this percentage of data_limit_bytes (0-1000; 100 = at or over the limit); unlimited users never match",
});
const ExpiresBefore = Type.String({
  format: "date-time",
  description: "users whose expire_at is before this moment (ISO 8601); users who never expire never match",
});

/** The list's filters in a query string (status comma-separated). */
const ListFilterQuery = {
  status: Type.Optional(
    Type.String({
      pattern: `^${STATUS_NAMES}(,${STATUS_NAMES}){0,4}$`,
      description: "one status or several, comma-separated (e.g. limited,expired)",
    }),
  ),
  expires_before: Type.Optional(ExpiresBefore),
  used_over_percent: Type.Optional(UsedOverPercent),
  owner_admin_id: Type.Optional(
    Type.Union([Uuid, Type.Literal("none")], {
      description:
        "users this admin owns, or none: users owned by nobody. An admin whose users.read scope is own always sees only their own users",
    }),
  ),
};

/** page/per_page as the seed has them, or an opaque cursor from a previous page's next_cursor. */
export const ListQuery = Type.Object(
  {
    page: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description: "1 when neither page nor cursor is given",
      }),
    ),
    per_page: Type.Integer({ minimum: 1, maximum: 500, default: 50 }),
    ...ListFilterQuery,
    sort: Type.Optional(
      Type.Union([Type.Literal("created_at"), Type.Literal("used_bytes"), Type.Literal("expire_at")], {
        description:
          "created_at (default: the seed's order, oldest first), used_bytes or expire_at; ties by id. expire_at null (never) sorts after every date ascending and before them descending",
      }),
    ),
    order: Type.Optional(
      Type.Union([Type.Literal("asc"), Type.Literal("desc")], { description: "asc (default) or desc" }),
    ),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        pattern: "^[A-Za-z0-9_-]+$",
        description:
          "next_cursor of the page before: the page after it, as fast at any depth (keyset); not with page",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuery>;

export const UserPage = Type.Object({
  items: Type.Array(User),
  total: Type.Integer({
    description:
      "every user without filters; with filters the users matching them, counted when the first page was asked for (the cursor carries it on)",
  }),
  page: Type.Integer(),
  per_page: Type.Integer(),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: "opaque; pass as cursor for the next page. null on the last page",
  }),
});
export type UserPage = Static<typeof UserPage>;

/** What a bulk action works on when it is given a filter: the list's filters, at least one of them. */
export const UserFilter = Type.Object(
  {
    status: Type.Optional(Type.Array(UserStatus, { minItems: 1, maxItems: 5, uniqueItems: true })),
    expires_before: Type.Optional(ExpiresBefore),
    used_over_percent: Type.Optional(UsedOverPercent),
    owner_admin_id: ListFilterQuery.owner_admin_id,
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: "at least one filter: never every user by accident",
  },
);
export type UserFilter = Static<typeof UserFilter>;

const ExtendExpiry = Type.Object(
  {
    type: Type.Literal("extend_expiry"),
    days: Type.Integer({ minimum: 1, maximum: 36_600 }),
  },
  {
    additionalProperties: false,
    description:
      "expire_at + days for users with an expiry, counted from now for one whose expiry has passed (so they are active again); users who never expire are left alone (not counted)",
  },
);
const AddDataLimit = Type.Object(
  {
    type: Type.Literal("add_data_limit"),
    bytes: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  },
  {
    additionalProperties: false,
    description:
      "data_limit_bytes + bytes for users with a limit; unlimited users stay unlimited (not counted)",
  },
);
const ResetUsage = Type.Object(
  { type: Type.Literal("reset_usage") },
  {
    additionalProperties: false,
    description: "used_bytes 0 and last_reset_at now (lifetime_used_bytes kept)",
  },
);
const SetStatus = Type.Object(
  {
    type: Type.Literal("set_status"),
    status: Type.Union([Type.Literal("active"), Type.Literal("disabled")]),
  },
  {
    additionalProperties: false,
    description: "active (limited or expired at once where the numbers say so) or disabled",
  },
);
const DeleteExpired = Type.Object(
  {
    type: Type.Literal("delete_expired"),
    expired_for_days: Type.Integer({ minimum: 0, maximum: 36_600 }),
  },
  {
    additionalProperties: false,
    description:
      "deletes the selected users whose expire_at is more than expired_for_days days ago, their grants taken off the cores first",
  },
);

export const BulkAction = Type.Union([ExtendExpiry, AddDataLimit, ResetUsage, SetStatus, DeleteExpired]);
export type BulkAction = Static<typeof BulkAction>;
export const MAX_BULK_IDS = 10_000;

export const BulkActionRequest = Type.Object(
  {
    action: BulkAction,
    ids: Type.Optional(
      Type.Array(Uuid, {
        minItems: 1,
        maxItems: MAX_BULK_IDS,
        description: "these users (unknown ids are skipped)",
      }),
    ),
    filter: Type.Optional(UserFilter),
  },
  { additionalProperties: false, description: "action over ids or over a filter (exactly one of the two)" },
);
export type BulkActionRequest = Static<typeof BulkActionRequest>;

export const BulkActionResult = Type.Object({
  action: Type.String(),
  matched: Type.Integer({ description: "users the ids or the filter selected" }),
  changed: Type.Integer({ description: "users the action changed (deleted, for delete_expired)" }),
  status_changed: Type.Integer({ description: "of those, users whose status changed" }),
});
export type BulkActionResult = Static<typeof BulkActionResult>;

export const OwnerChange = Type.Object(
  {
    owner_admin_id: Type.Union([Uuid, Type.Null()], {
      description: "the admin who owns the user from now on (null: nobody); within that admin's quotas",
    }),
  },
  { additionalProperties: false },
);
export type OwnerChange = Static<typeof OwnerChange>;
