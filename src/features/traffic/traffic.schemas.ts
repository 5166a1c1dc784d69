// A user's collected traffic: totals and per server.
import { type Static, Type } from "typebox";
import { Uuid } from "../../lib/schemas.ts";

const Bytes = { uplink_bytes: Type.Integer(), downlink_bytes: Type.Integer() };

export const UserUsage = Type.Object({
  user_id: Uuid,
  ...Bytes,
  servers: Type.Array(Type.Object({ server_id: Uuid, server_name: Type.String(), ...Bytes })),
});
export type UserUsage = Static<typeof UserUsage>;
