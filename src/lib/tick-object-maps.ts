// Keeps one of process.nextTick's tick objects alive for the life of the process, so that V8 never
// collects the hidden classes (maps) those objects are built through. Node builds every tick object
// with a literal whose first keys are computed ({ [async_id_symbol]: …, [trigger_async_id_symbol]: …,
// callback, args }); V8 defines such keys through DefineKeyedOwnPropertyInLiteral, whose feedback
// holds the maps weakly and knows only two states: one map (optimized code then builds the object
// inline) or "megamorphic" (a call into the runtime for every key, for good). A full garbage
// collection at a moment when no tick object is alive — the one after the warm-up
// (jobs/subscription-cache.ts), or any later one while the process is idle — frees the maps; the
// next tick object gets new ones and every later nextTick pays the runtime path: three runtime calls
// per tick object, 30 a request on /sub, about 39,000 instructions a request (callgrind, the request
// path) and some 14 % of the service's CPU per request. Measurements and the reproduction:
// docs/benchmarks/HISTORY.md, "A V8 slow path in every process.nextTick".
import { executionAsyncResource } from "node:async_hooks";

/** The tick object of one nextTick callback (executionAsyncResource() inside it is the tick object
 * itself, with no async hook enabled), held so its maps are never collected. main.ts imports this
 * module before anything else, so the hold is in place before the first full collection. */
const held: object[] = [];
process.nextTick(() => {
  held.push(executionAsyncResource());
});
