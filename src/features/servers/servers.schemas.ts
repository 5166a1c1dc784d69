// The server resource of the seed, plus what Portcullis learned about its core (flavor, wire
// layout, capabilities). api_credentials is write-only: accepted on create/update, never in a response.
import { type Static, Type } from "typebox";
import { CORE_CONNECTIONS } from "../../cores/core-transport.ts";
import { CORE_CAPABILITIES, WIRE_LAYOUTS } from "../../cores/wire-layout.ts";
import { SERVER_STATUSES } from "../../domain/sync.ts";
import { Literals, Timestamp, Uuid } from "../../lib/schemas.ts";

const Status = Literals(SERVER_STATUSES);

const Host = Type.String({ minLength: 1, maxLength: 253, description: "DNS name, IPv4 or IPv6 address" });
const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const WireLayout = Type.Enum(WIRE_LAYOUTS, {
  description: "field numbering of the core's API (docs/CORES.md)",
});
const PinnedLayout = Type.Union([WireLayout, Type.Null()], {
  description: "pins the wire layout (no detection); null unpins it and detects again on the next contact",
});
const Capabilities = Type.Union([Type.Array(Type.Enum(CORE_CAPABILITIES)), Type.Null()], {
  description: "optional calls the core answers (listing, online_users); null until detected",
});

const Credentials = Type.String({
  minLength: 1,
  maxLength: 65536,
  description:
    'write-only JSON: {"ca"?: PEM, "cert"?: PEM, "key"?: PEM, "server_name"?: string, "token"?: string}; ' +
    "null clears it on update",
});

const UsageCoefficient = Type.Number({
  minimum: 0,
  maximum: 1000,
  description: "a user's traffic on this server counts × this towards their used_bytes (default 1; 0 = free)",
});

const Connection = Type.Enum(CORE_CONNECTIONS, {
  description:
    "how the panel reaches the core: `direct` to its gRPC API at grpc_hostname:grpc_port, or `node` " +
    "to the Portcullis node agent listening there (mutual TLS; docs/NODES.md)",
});

export const Server = Type.Object({
  id: Uuid,
  name: Type.String(),
  hostname: Type.String(),
  grpc_hostname: Type.String(),
  grpc_port: Type.Integer(),
  status: Status,
  default_certificate_id: Type.Union([Uuid, Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  has_credentials: Type.Boolean(),
  core: Type.Union([Type.Literal("xray"), Type.Literal("v2ray"), Type.Null()], {
    description: "core flavor detected on the first successful call",
  }),
  core_version: Type.Union([Type.String(), Type.Null()], {
    description: "always null: neither API reports a version (wire_layout says which releases match)",
  }),
  wire_layout: Type.Union([WireLayout, Type.Null()], {
    description: "detected on the first contact and after every core restart, unless pinned",
  }),
  wire_layout_pinned: Type.Boolean(),
  core_capabilities: Capabilities,
  last_error: Type.Union([Type.String(), Type.Null()]),
  usage_coefficient: UsageCoefficient,
  connection: Connection,
});
export type Server = Static<typeof Server>;

export const ServerCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128, pattern: "\\S", format: "line" }),
    hostname: Host,
    grpc_hostname: Type.Optional(Host),
    grpc_port: Type.Optional(Port),
    api_credentials: Type.Optional(Credentials),
    default_certificate_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
    wire_layout: Type.Optional(PinnedLayout),
    usage_coefficient: Type.Optional(UsageCoefficient),
    connection: Type.Optional(Connection),
  },
  { additionalProperties: false },
);
export type ServerCreate = Static<typeof ServerCreate>;

export const ServerUpdate = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: "\\S", format: "line" })),
    hostname: Type.Optional(Host),
    grpc_hostname: Type.Optional(Host),
    grpc_port: Type.Optional(Port),
    api_credentials: Type.Optional(Type.Union([Credentials, Type.Null()])),
    status: Type.Optional(Status),
    default_certificate_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
    wire_layout: Type.Optional(PinnedLayout),
    usage_coefficient: Type.Optional(UsageCoefficient),
    connection: Type.Optional(Connection),
  },
  { additionalProperties: false },
);
export type ServerUpdate = Static<typeof ServerUpdate>;

export const ServerTestResult = Type.Object({
  connected: Type.Boolean(),
  endpoint: Type.String({ description: "host:port of the gRPC endpoint" }),
  core: Type.Union([Type.Literal("xray"), Type.Literal("v2ray"), Type.Null()]),
  core_version: Type.Union([Type.String(), Type.Null()]),
  wire_layout: Type.Union([WireLayout, Type.Null()]),
  core_capabilities: Capabilities,
  latency_ms: Type.Union([Type.Number(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
});
export type ServerTestResult = Static<typeof ServerTestResult>;

const Traffic = Type.Object({ uplink_bytes: Type.Integer(), downlink_bytes: Type.Integer() });

export const ServerStats = Type.Object({
  server_id: Uuid,
  core: Type.Union([Type.Literal("xray"), Type.Literal("v2ray")]),
  core_version: Type.Union([Type.String(), Type.Null()]),
  uptime_seconds: Type.Integer(),
  memory: Type.Object({
    alloc_bytes: Type.Integer(),
    sys_bytes: Type.Integer(),
    total_alloc_bytes: Type.Integer(),
    live_objects: Type.Integer(),
    goroutines: Type.Integer(),
    gc_count: Type.Integer(),
  }),
  traffic: Traffic,
  inbounds: Type.Array(Type.Object({ tag: Type.String(), ...Traffic.properties })),
  users: Type.Array(Type.Object({ email: Type.String(), ...Traffic.properties })),
  collected_at: Timestamp,
});
export type ServerStats = Static<typeof ServerStats>;
