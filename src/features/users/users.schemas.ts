// The user resource of the seed: name, optional comment and telegram_id.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";

const Name = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: "\\S",
  description: "1-128 characters, trimmed",
});
const Comment = Type.Union([Type.String({ maxLength: 1000 }), Type.Null()]);
const TelegramId = Type.Union([Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()]);

export const User = Type.Object({
  id: Uuid,
  name: Type.String(),
  comment: Type.Union([Type.String(), Type.Null()]),
  telegram_id: Type.Union([Type.Integer(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  subscription_url: Type.String({
    description:
      "the user's subscription URL: /sub/{sub_token}, absolute when public_url is set in /api/subscription-settings; a credential (POST /api/users/{id}/revoke-subscription replaces it)",
  }),
});
export type User = Static<typeof User>;

export const UserCreate = Type.Object(
  { name: Name, comment: Type.Optional(Comment), telegram_id: Type.Optional(TelegramId) },
  { additionalProperties: false },
);
export type UserCreate = Static<typeof UserCreate>;

export const UserUpdate = Type.Object(
  { name: Type.Optional(Name), comment: Type.Optional(Comment), telegram_id: Type.Optional(TelegramId) },
  { additionalProperties: false },
);
export type UserUpdate = Static<typeof UserUpdate>;

export const SearchQuery = Type.Object(
  {
    q: Type.String({ minLength: 1, maxLength: 128, description: "name substring, telegram_id or user uuid" }),
  },
  { additionalProperties: false },
);

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
  total: Type.Integer(),
  page: Type.Integer(),
  per_page: Type.Integer(),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: "opaque; pass as cursor for the next page. null on the last page",
  }),
});
export type UserPage = Static<typeof UserPage>;
