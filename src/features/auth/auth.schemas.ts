// Request and response shapes of the auth and API-key endpoints.
import { type Static, Type } from "typebox";
import { PERMISSIONS, type Permission, ROLES } from "../../lib/roles.ts";
import { Timestamp, Uuid } from "../../lib/schemas.ts";

export const RoleSchema = Type.Union(
  [Type.Literal("owner"), Type.Literal("operator"), Type.Literal("support"), Type.Literal("viewer")],
  {
    description:
      "owner: everything; operator: the fleet; support: users' links, usage, expiry; viewer: read-only",
  },
);
// The schema above lists ROLES; this line fails to compile when the two drift apart.
const _rolesMatch: readonly Static<typeof RoleSchema>[] = ROLES;
void _rolesMatch;

const TotpCode = Type.String({
  pattern: "^[0-9]{6}$",
  description: "the 6-digit code of the authenticator app",
});
const RecoveryCode = Type.String({ minLength: 1, maxLength: 32, description: "one of the recovery codes" });

export const TokenRequest = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 64 }),
    password: Type.String({ minLength: 1, maxLength: 256 }),
    totp_code: Type.Optional(TotpCode),
    recovery_code: Type.Optional(RecoveryCode),
  },
  { additionalProperties: false },
);
export type TokenRequest = Static<typeof TokenRequest>;

export const TokenResponse = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal("Bearer"),
  expires_in: Type.Integer({ description: "seconds" }),
});

export const ApiKey = Type.Object({
  id: Uuid,
  name: Type.String(),
  role: Type.Union([RoleSchema, Type.Null()], { description: "null: the admin's own role" }),
  created_at: Timestamp,
  expires_at: Type.Union([Timestamp, Type.Null()]),
  last_used_at: Type.Union([Timestamp, Type.Null()]),
});

export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  key: Type.String({ description: "the secret; shown only in this response" }),
});

export const ApiKeyCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128, format: "line" }),
    expires_in_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
    role: Type.Optional(RoleSchema),
  },
  { additionalProperties: false },
);
export type ApiKeyCreate = Static<typeof ApiKeyCreate>;

export const Me = Type.Object({
  id: Uuid,
  username: Type.String(),
  role: RoleSchema,
  admin_role: RoleSchema,
  token_kind: Type.Union([Type.Literal("session"), Type.Literal("api_key")]),
  permissions: Type.Array(Type.Unsafe<Permission>({ type: "string", enum: [...PERMISSIONS] }), {
    description: "what this token may do",
  }),
  totp_enabled: Type.Boolean(),
});

export const TotpEnrolment = Type.Object({
  secret: Type.String({ description: "base32; enter it by hand if the QR code cannot be scanned" }),
  otpauth_uri: Type.String(),
  qr_svg: Type.String({ description: "the otpauth URI as an SVG QR code" }),
});

export const TotpConfirm = Type.Object({ code: TotpCode }, { additionalProperties: false });

export const RecoveryCodes = Type.Object({
  recovery_codes: Type.Array(Type.String(), { description: "each works once; shown only in this response" }),
});

export const SecondFactor = Type.Object(
  { totp_code: Type.Optional(TotpCode), recovery_code: Type.Optional(RecoveryCode) },
  { additionalProperties: false },
);

export const PasswordChange = Type.Object(
  {
    current_password: Type.String({ minLength: 1, maxLength: 256 }),
    new_password: Type.String({ minLength: 8, maxLength: 256 }),
    totp_code: Type.Optional(TotpCode),
    recovery_code: Type.Optional(RecoveryCode),
  },
  { additionalProperties: false },
);
