// Request and response shapes of /api/admins. Password hashes and TOTP secrets are never in a response.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";
import { RoleSchema } from "../auth/auth.schemas.ts";

const Username = Type.String({
  pattern: "^[A-Za-z0-9._-]{1,64}$",
  description: "1-64 letters, digits, . _ -",
});
const Password = Type.String({ minLength: 8, maxLength: 256 });

export const AdminView = Type.Object({
  id: Uuid,
  username: Type.String(),
  role: RoleSchema,
  is_disabled: Type.Boolean(),
  totp_enabled: Type.Boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type AdminView = Static<typeof AdminView>;

export const AdminCreate = Type.Object(
  { username: Username, password: Password, role: RoleSchema },
  { additionalProperties: false },
);
export type AdminCreate = Static<typeof AdminCreate>;

export const AdminUpdate = Type.Object(
  {
    role: Type.Optional(RoleSchema),
    is_disabled: Type.Optional(Type.Boolean()),
    password: Type.Optional(Password),
    reset_totp: Type.Optional(Type.Boolean({ description: "true: remove the admin's second factor" })),
  },
  { additionalProperties: false },
);
export type AdminUpdate = Static<typeof AdminUpdate>;
