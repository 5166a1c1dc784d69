// Groups (issue 49): a named set of inbounds across servers that users belong to; a member holds
// every inbound of their groups as a grant (docs/GROUPS.md).
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";
import { UserFilter, UserStatus } from "../users/users.schemas.ts";

export const MAX_GROUP_INBOUNDS = 500;
export const MAX_MEMBER_IDS = 10_000;

const GroupName = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: "\\S",
  format: "line",
  description:
    "1-64 characters, trimmed, unique; one line: no control characters, line breaks or bidi overrides",
});

const InboundIds = Type.Array(Uuid, {
  maxItems: MAX_GROUP_INBOUNDS,
  uniqueItems: true,
  description: "server_inbounds ids, on any servers",
});

export const Group = Type.Object({
  id: Uuid,
  name: Type.String(),
  inbound_ids: Type.Array(Uuid, { description: "the group's inbounds, in the order they were added" }),
  member_count: Type.Integer({
    description: "members; for an admin whose users.read scope is own, only the users they own",
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Group = Static<typeof Group>;

export const GroupCreate = Type.Object(
  { name: GroupName, inbound_ids: Type.Optional(InboundIds) },
  { additionalProperties: false },
);
export type GroupCreate = Static<typeof GroupCreate>;

export const GroupUpdate = Type.Object(
  {
    name: Type.Optional(GroupName),
    inbound_ids: Type.Optional(
      Type.Array(Uuid, {
        ...InboundIds,
        description:
          "the whole new set: inbounds left out are revoked from every member (unless held otherwise)",
      }),
    ),
  },
  { additionalProperties: false },
);
export type GroupUpdate = Static<typeof GroupUpdate>;

export const GroupInboundsAdd = Type.Object(
  { inbound_ids: Type.Array(Uuid, { ...InboundIds, minItems: 1 }) },
  { additionalProperties: false },
);
export type GroupInboundsAdd = Static<typeof GroupInboundsAdd>;

export const GroupInboundParams = Type.Object(
  { id: Uuid, inbound_id: Uuid },
  { additionalProperties: false },
);
export const GroupMemberParams = Type.Object({ id: Uuid, user_id: Uuid }, { additionalProperties: false });

/** The users a membership change works on: ids, or the user list's filters (never all by accident). */
export const MembersChange = Type.Object(
  {
    user_ids: Type.Optional(
      Type.Array(Uuid, { minItems: 1, maxItems: MAX_MEMBER_IDS, description: "unknown ids are skipped" }),
    ),
    filter: Type.Optional(UserFilter),
  },
  { additionalProperties: false, description: "user_ids or filter, exactly one of the two" },
);
export type MembersChange = Static<typeof MembersChange>;

const SyncCounts = Type.Object({ synced: Type.Integer(), pending: Type.Integer(), error: Type.Integer() });

export const InboundConvergence = Type.Object({
  server_inbound_id: Uuid,
  granted: Type.Integer({ description: "grants made" }),
  revoked: Type.Integer({ description: "grants taken away (held through groups only)" }),
  sync: SyncCounts,
});

export const MembersChangeResult = Type.Object({
  matched: Type.Integer({ description: "existing users selected" }),
  changed: Type.Integer({ description: "memberships added or removed" }),
  inbounds: Type.Array(InboundConvergence, { description: "one per inbound of the group" }),
  duration_ms: Type.Integer(),
});
export type MembersChangeResult = Static<typeof MembersChangeResult>;

export const GroupChangeResult = Type.Object({
  group: Group,
  inbounds: Type.Array(InboundConvergence, { description: "one per inbound added or removed" }),
  duration_ms: Type.Integer(),
});
export type GroupChangeResult = Static<typeof GroupChangeResult>;

export const Member = Type.Object({ id: Uuid, name: Type.String(), status: UserStatus });

export const MembersQuery = Type.Object(
  {
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 100 }),
    after: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
export type MembersQuery = Static<typeof MembersQuery>;

export const MemberPage = Type.Object({
  items: Type.Array(Member, { description: "by user id" }),
  total: Type.Integer(),
  next_cursor: Type.Union([Uuid, Type.Null()], { description: "pass as after for the next page" }),
});
export type MemberPage = Static<typeof MemberPage>;
