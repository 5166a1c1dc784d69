// The server inbound resource of the seed (a listener made on one server from a template), plus
// where its core stands (sync_state, sync_error).
import { type Static, Type } from "typebox";
import { SYNC_STATES } from "../../domain/sync.ts";
import { Literals, Timestamp, Uuid } from "../../lib/schemas.ts";

const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const Tag = Type.String({
  pattern: "^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,99}$",
  description: "unique per server; letters, digits and _ . : @ - (at most 100)",
});
const VariableValues = Type.Record(Type.String(), Type.Unknown(), {
  description: "template variable name → value (JSON of the variable's type)",
});

export const SyncState = Literals(SYNC_STATES, {
  description:
    "synced: the core holds what the database says; pending: the core was unreachable, the change waits; " +
    "error: the core refused it (sync_error says why)",
});

export const Inbound = Type.Object({
  id: Uuid,
  server_id: Uuid,
  template_id: Uuid,
  template_name: Type.String(),
  tag: Type.String(),
  port_override: Type.Integer({ description: "the inbound's port" }),
  certificate_id: Type.Union([Uuid, Type.Null()]),
  variable_values: VariableValues,
  is_active: Type.Boolean(),
  sync_state: SyncState,
  sync_error: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Inbound = Static<typeof Inbound>;

export const InboundCreate = Type.Object(
  {
    template_id: Uuid,
    port: Port,
    certificate_id: Type.Optional(Uuid),
    is_active: Type.Optional(Type.Boolean({ default: true })),
    variable_values: Type.Optional(VariableValues),
    tag: Type.Optional(Tag),
  },
  { additionalProperties: false },
);
export type InboundCreate = Static<typeof InboundCreate>;

export const InboundUpdate = Type.Object(
  {
    tag: Type.Optional(Tag),
    port_override: Type.Optional(Port),
    certificate_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
    variable_values: Type.Optional(VariableValues),
    is_active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type InboundUpdate = Static<typeof InboundUpdate>;

export const ServerParams = Type.Object({ server_id: Uuid }, { additionalProperties: false });
export const InboundParams = Type.Object(
  { server_id: Uuid, inbound_id: Uuid },
  { additionalProperties: false },
);
