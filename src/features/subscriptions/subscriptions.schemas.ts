// What GET /api/subscriptions/cache answers: this instance's response cache, counted since it started.
import { type Static, Type } from "typebox";

export const CacheStats = Type.Object({
  entries: Type.Integer({ description: "users whose response is cached" }),
  bytes: Type.Integer({
    description: "what the budget bounds: pages in use, the estimated index and the reference bodies",
  }),
  budget_bytes: Type.Integer({ description: "PORTCULLIS_SUB_CACHE_MB in bytes; 0: the cache is off" }),
  hits: Type.Integer({ description: "GET/HEAD /sub answered from the cache" }),
  misses: Type.Integer({ description: "answered by a database read and a render" }),
  evictions: Type.Integer({ description: "entries dropped to stay within the budget" }),
  layouts: Type.Integer({ description: "distinct sets of inbounds the cached users have grants on" }),
  layout_resets: Type.Integer({
    description: "times the layouts filled their share of the budget and the cache started over",
  }),
});
export type CacheStats = Static<typeof CacheStats>;
