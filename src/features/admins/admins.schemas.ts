// Request and response shapes of /api/admins. Password hashes and TOTP secrets are never in a response.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";
import { RoleSchema } from "../auth/auth.schemas.ts";

const Username = Type.String({
  pattern: "^[A-Za-z0-9._-]{1,64}$",
  description: "1-64 letters, digits, . _ -",
});
const Password = Type.String({ minLength: 8, maxLength: 256 });

const ScopeValue = Type.Union([Type.Literal("own"), Type.Literal("all")]);
/** One scope per permission that acts on users (lib/roles.ts SCOPABLE_PERMISSIONS). */
export const Scopes = Type.Object(
  {
    "users.read": Type.Optional(ScopeValue),
    "users.write": Type.Optional(ScopeValue),
    "users.lifecycle": Type.Optional(ScopeValue),
    "links.read": Type.Optional(ScopeValue),
    "access.write": Type.Optional(ScopeValue),
  },
  {
    additionalProperties: false,
    description:
      "own: the permission reaches only the users this admin owns (another admin's user is a 404); all: every user. Omitted: all. An owner's are always all",
  },
);
export type Scopes = Static<typeof Scopes>;

const QuotaFields = {
  max_users: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: 100_000_000 }), Type.Null()], {
      description: "most users this admin may own (null: no quota)",
    }),
  ),
  max_data_bytes: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()], {
      description:
        "most bytes of data limits this admin may grant in all, summed over their users (null: no quota); with a quota, a user without a data limit is refused",
    }),
  ),
  allowed_group_ids: Type.Optional(
    Type.Union([Type.Array(Uuid, { maxItems: 1000, uniqueItems: true }), Type.Null()], {
      description: "groups this admin may put users in (null: any group)",
    }),
  ),
  allowed_plan_ids: Type.Optional(
    Type.Union([Type.Array(Uuid, { maxItems: 1000, uniqueItems: true }), Type.Null()], {
      description:
        "plans this admin may use: create users from, renew with, set as a user's next_plan_id (null: any plan)",
    }),
  ),
};

export const AdminView = Type.Object({
  id: Uuid,
  username: Type.String(),
  role: RoleSchema,
  is_disabled: Type.Boolean(),
  totp_enabled: Type.Boolean(),
  scopes: Type.Object({
    "users.read": ScopeValue,
    "users.write": ScopeValue,
    "users.lifecycle": ScopeValue,
    "links.read": ScopeValue,
    "access.write": ScopeValue,
  }),
  max_users: Type.Union([Type.Integer(), Type.Null()]),
  max_data_bytes: Type.Union([Type.Integer(), Type.Null()]),
  allowed_group_ids: Type.Union([Type.Array(Uuid), Type.Null()]),
  allowed_plan_ids: Type.Union([Type.Array(Uuid), Type.Null()]),
  owned: Type.Object(
    {
      users: Type.Integer(),
      data_limit_bytes: Type.Integer({ description: "the sum of their data limits" }),
      unlimited_users: Type.Integer({ description: "users without a data limit" }),
    },
    { description: "the users this admin owns, against the quotas" },
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type AdminView = Static<typeof AdminView>;

export const AdminCreate = Type.Object(
  { username: Username, password: Password, role: RoleSchema, scopes: Type.Optional(Scopes), ...QuotaFields },
  { additionalProperties: false },
);
export type AdminCreate = Static<typeof AdminCreate>;

export const AdminUpdate = Type.Object(
  {
    role: Type.Optional(RoleSchema),
    is_disabled: Type.Optional(Type.Boolean()),
    password: Type.Optional(Password),
    reset_totp: Type.Optional(Type.Boolean({ description: "true: remove the admin's second factor" })),
    disable_users: Type.Optional(
      Type.Boolean({
        description:
          "with is_disabled true: every user this admin owns is disabled too (taken off the cores); re-enabling them is a bulk action over owner_admin_id",
      }),
    ),
    scopes: Type.Optional(Scopes),
    ...QuotaFields,
  },
  { additionalProperties: false },
);
export type AdminUpdate = Static<typeof AdminUpdate>;
