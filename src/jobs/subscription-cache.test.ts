// The warm-up's garbage collections (pure: a stand-in gc and heap reading): a full collection only
// when the heap has grown by the allowance since the last one, and none without --expose-gc.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { WARM_GARBAGE_BYTES, warmGarbageCollector } from "./subscription-cache.ts";

describe("warm-up garbage collection", () => {
  test("collects when the heap grew by the allowance since the last collection, and at the end", () => {
    let used = 100;
    let collections = 0;
    const gc = () => {
      collections++;
      used = 100 + collections; // what a collection keeps
    };
    const collector = warmGarbageCollector(gc, () => used, 50);
    used = 149;
    collector.betweenBatches();
    assert.equal(collections, 0, "49 bytes more: not yet");
    used = 150;
    collector.betweenBatches();
    assert.equal(collections, 1, "50 bytes more: collected");
    used = 150;
    collector.betweenBatches();
    assert.equal(collections, 1, "measured from what the collection kept (101), not from the start");
    used = 151;
    collector.betweenBatches();
    assert.equal(collections, 2);
    collector.collect();
    assert.equal(collections, 3, "the final collection always runs");
  });

  test("without --expose-gc nothing is collected (nor read); the default allowance is 32 MiB", () => {
    let reads = 0;
    const collector = warmGarbageCollector(undefined, () => {
      reads++;
      return 0;
    });
    collector.betweenBatches();
    collector.collect();
    assert.equal(reads, 0);
    assert.equal(WARM_GARBAGE_BYTES, 32 * 2 ** 20);
  });
});
