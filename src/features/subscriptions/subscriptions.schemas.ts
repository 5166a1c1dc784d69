// What GET /api/subscriptions/cache answers: this instance's subscriptions in memory, counted since it started.
import { type Static, Type } from "typebox";

export const CacheStats = Type.Object({
  entries: Type.Integer({ description: "users whose subscription is in memory" }),
  bytes: Type.Integer({
    description: "what the budget bounds: record pages, the hash table, layouts and their templates",
  }),
  budget_bytes: Type.Integer({
    description: "PORTCULLIS_SUB_CACHE_MB in bytes; 0: nothing is kept in memory",
  }),
  hits: Type.Integer({ description: "GET/HEAD /sub answered from memory" }),
  misses: Type.Integer({ description: "answered by a database read" }),
  not_stored: Type.Integer({
    description:
      "users read from the database but not kept: the budget was full (raise PORTCULLIS_SUB_CACHE_MB)",
  }),
  layouts: Type.Integer({ description: "distinct lists of inbounds the users in memory have grants on" }),
  stale_layouts: Type.Integer({
    description:
      "layouts waiting for a changed inbound to be read again (their users are read from the database)",
  }),
});
export type CacheStats = Static<typeof CacheStats>;
