// GET /api/overview: the home page's one call — every server's health and its agent's report, the
// users per status, and who is online now (from the node agents' access logs).
import { type Static, type TSchema, Type } from "typebox";
import { SERVER_STATUSES } from "../../domain/sync.ts";
import type { USER_STATUSES } from "../../domain/users.ts";
import { Literals, Timestamp, Uuid } from "../../lib/schemas.ts";

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const OverviewAgent = Type.Object(
  {
    reachable: Type.Boolean({
      description: "false: the agent did not answer within the overview's deadline",
    }),
    agent_version: Nullable(Type.String()),
    agent_uptime_seconds: Nullable(Type.Integer()),
    core_flavor: Nullable(Type.Union([Type.Literal("xray"), Type.Literal("v2ray")])),
    core_version: Nullable(Type.String()),
    core_running: Nullable(Type.Boolean()),
    core_uptime_seconds: Nullable(Type.Integer()),
    restarts: Nullable(Type.Integer({ description: "core restarts since the agent started" })),
    certificate_not_after: Nullable(Timestamp),
  },
  { description: "the node agent's report, asked for on this call; null for a direct server" },
);
export type OverviewAgent = Static<typeof OverviewAgent>;

export const OverviewServer = Type.Object({
  id: Uuid,
  name: Type.String(),
  status: Literals(SERVER_STATUSES),
  connection: Type.Union([Type.Literal("direct"), Type.Literal("node")]),
  core: Nullable(Type.Union([Type.Literal("xray"), Type.Literal("v2ray")])),
  last_seen_at: Nullable(Timestamp),
  offline_since: Nullable(Timestamp),
  last_error: Nullable(Type.String()),
  agent: Type.Union([OverviewAgent, Type.Null()]),
});

const UserCounts = Type.Object({
  active: Type.Integer(),
  disabled: Type.Integer(),
  limited: Type.Integer(),
  expired: Type.Integer(),
  on_hold: Type.Integer(),
} satisfies Record<(typeof USER_STATUSES)[number], TSchema>);

export const Overview = Type.Object({
  servers: Type.Array(OverviewServer),
  users: Type.Object({ total: Type.Integer(), by_status: UserCounts }),
  online: Type.Object(
    {
      users: Type.Integer({ description: "distinct users with an address seen in the agents' window" }),
      addresses: Type.Integer({ description: "distinct source addresses among them" }),
      window_minutes: Type.Integer(),
      unreachable_server_ids: Type.Array(Uuid, { description: "node servers whose agent did not answer" }),
    },
    {
      description:
        "from the node agents' access logs (GET /api/servers/{id}/online); direct servers add nothing",
    },
  ),
  generated_at: Timestamp,
});
export type Overview = Static<typeof Overview>;
