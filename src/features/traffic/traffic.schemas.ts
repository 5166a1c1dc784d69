// A user's collected traffic: totals and per server; and the usage history (hourly and daily
// buckets) for charts, per user and per server.
import { type Static, Type } from "typebox";
import { Timestamp, Uuid } from "../../lib/schemas.ts";
import { GRANULARITIES } from "./usage.ts";

const Bytes = { uplink_bytes: Type.Integer(), downlink_bytes: Type.Integer() };

export const UserUsage = Type.Object({
  user_id: Uuid,
  ...Bytes,
  servers: Type.Array(Type.Object({ server_id: Uuid, server_name: Type.String(), ...Bytes })),
});
export type UserUsage = Static<typeof UserUsage>;

const Granularity = Type.Union([Type.Literal(GRANULARITIES[0]), Type.Literal(GRANULARITIES[1])], {
  description: "hour: UTC hours, kept 7 days; day: UTC days, kept 13 months",
});

const RangeFields = {
  from: Timestamp,
  to: Type.String({
    format: "date-time",
    description: "exclusive; at most 7 days after from for hour, 400 for day",
  }),
  granularity: Granularity,
};

/** Other query parameters are ignored, as they were before the history existed (the totals' contract). */
export const UserUsageQuery = Type.Object({
  from: Type.Optional(
    Type.String({
      format: "date-time",
      description: "with to and granularity: the history instead of totals",
    }),
  ),
  to: Type.Optional(RangeFields.to),
  granularity: Type.Optional(Granularity),
});

export const FleetUsageQuery = Type.Object(
  { ...RangeFields, server_id: Type.Optional(Uuid) },
  { additionalProperties: false },
);
export type FleetUsageQuery = Static<typeof FleetUsageQuery>;

const Bucket = Type.Object({ start: Timestamp, ...Bytes });
const RangeOut = { granularity: Granularity, from: Timestamp, to: Timestamp };

export const UserUsageSeries = Type.Object({
  user_id: Uuid,
  ...RangeOut,
  ...Bytes,
  buckets: Type.Array(Bucket, {
    description: "every bucket of the range, oldest first, zero where nothing was carried",
  }),
});
export type UserUsageSeries = Static<typeof UserUsageSeries>;

export const UserUsageAnswer = Type.Union([UserUsage, UserUsageSeries], {
  description: "Without a query: the totals (UserUsage). With from, to and granularity: the history.",
});

export const FleetUsage = Type.Object({
  ...RangeOut,
  ...Bytes,
  servers: Type.Array(
    Type.Object({ server_id: Uuid, server_name: Type.String(), ...Bytes, buckets: Type.Array(Bucket) }),
  ),
});
export type FleetUsage = Static<typeof FleetUsage>;
