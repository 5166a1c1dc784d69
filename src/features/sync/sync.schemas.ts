// What POST /api/servers/{id}/sync answers: the summary of the full reconcile it ran, or (several
// instances) that the instance holding the server was asked to run it.
import { type Static, Type } from "typebox";

export const ReconcileSummary = Type.Object({
  mode: Type.Union([Type.Literal("full"), Type.Literal("incremental")]),
  reason: Type.String(),
  inbounds: Type.Integer({ description: "inbounds (re)applied with all their users" }),
  users: Type.Integer({ description: "users added to the core" }),
  removed: Type.Integer({ description: "inbounds and users taken off the core" }),
  duration_ms: Type.Integer(),
  errors: Type.Array(
    Type.Object({
      tag: Type.String(),
      email: Type.Union([Type.String(), Type.Null()]),
      code: Type.String(),
      message: Type.String(),
    }),
    { description: "at most 100" },
  ),
  is_complete: Type.Boolean({ description: "false: the core went away (or shutdown) before the end" }),
});
export type ReconcileSummary = Static<typeof ReconcileSummary>;

export const SyncRequested = Type.Object({
  status: Type.Literal("requested"),
  detail: Type.String(),
});
