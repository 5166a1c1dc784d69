// Node enrollment over the API: the join string an operator copies to the proxy host, the agent's
// join request (its token and certificate request), and the agent's report.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";

export const Enrollment = Type.Object({
  join_string: Type.String({
    description: "one-time (single use, 1 hour): give it to `portcullis node join`",
  }),
  command: Type.String({ description: "the command to run on the proxy host, quoted for a POSIX shell" }),
  expires_at: Timestamp,
  ca_fingerprint: Type.String({ description: "SHA-256 of the panel CA (hex); the agent pins it" }),
});

export const JoinRequest = Type.Object(
  {
    token: Type.String({ minLength: 32, maxLength: 128, pattern: "^[A-Za-z0-9_-]+$" }),
    csr: Type.String({
      minLength: 1,
      maxLength: 16384,
      description: "PEM PKCS#10 request for an EC P-256 key",
    }),
  },
  { additionalProperties: false },
);
export type JoinRequest = Static<typeof JoinRequest>;

export const Joined = Type.Object({
  server_id: Uuid,
  ca_cert: Type.String({ description: "PEM of the panel CA" }),
  cert: Type.String({ description: "PEM of the agent's certificate (90 days; renewed by the panel)" }),
});

export const AgentStatus = Type.Object(
  {
    agent_version: Type.String(),
    agent_uptime_seconds: Type.Integer(),
    server_id: Type.String(),
    core: Type.Object({
      flavor: Type.Union([Type.Literal("xray"), Type.Literal("v2ray"), Type.Null()]),
      version: Type.Union([Type.String(), Type.Null()]),
      running: Type.Boolean(),
      pid: Type.Union([Type.Integer(), Type.Null()]),
      started_at: Type.Union([Type.String(), Type.Null()]),
      uptime_seconds: Type.Union([Type.Integer(), Type.Null()]),
      restarts: Type.Integer(),
      last_exit: Type.Union([Type.String(), Type.Null()]),
    }),
    base_sha256: Type.String(),
    desired: Type.Object(
      { inbounds: Type.Integer(), users: Type.Integer() },
      { description: "the desired state the agent keeps on disk and re-applies after a core restart" },
    ),
    last_replay: Type.Union([
      Type.Object({
        at: Type.String(),
        inbounds: Type.Integer(),
        users: Type.Integer(),
        failed: Type.Integer(),
        duration_ms: Type.Integer(),
      }),
      Type.Null(),
    ]),
    certificate: Type.Object({ fingerprint: Type.String(), not_after: Type.String() }),
  },
  { description: "what the agent reports about itself and its core" },
);

export const BaseDocument = Type.Object({
  document: Type.Unknown({
    description:
      "the core config's base (log.loglevel, policy, outbounds, routing.rules/domainStrategy, dns); the agent adds the API, stats and inbounds",
  }),
  is_default: Type.Boolean(),
});

export const BaseDocumentUpdate = Type.Object(
  {
    document: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
      description: "null: back to the default",
    }),
  },
  { additionalProperties: false },
);
export type BaseDocumentUpdate = Static<typeof BaseDocumentUpdate>;

const Address = { ip: Type.String(), last_seen: Timestamp };

export const ServerOnline = Type.Object({
  server_id: Uuid,
  users: Type.Array(
    Type.Object({
      email: Type.String({ description: "the proxy user id the core knows the user by" }),
      user_id: Type.Union([Uuid, Type.Null()]),
      addresses: Type.Array(Type.Object(Address)),
    }),
  ),
});

export const UserOnline = Type.Object({
  user_id: Uuid,
  addresses: Type.Array(Type.Object({ ...Address, server_id: Uuid })),
  unreachable_server_ids: Type.Array(Uuid, { description: "node servers whose agent could not be asked" }),
});

export const CoreLog = Type.Object({
  server_id: Uuid,
  lines: Type.Array(Type.String(), {
    maxItems: 200,
    description:
      "the core's last lines (access and error log), oldest first; UUIDs and long base64 runs masked as [redacted]",
  }),
  collected_at: Timestamp,
});
