// The agent's heap settler: a collection when a burst has grown the used heap by the allowance, one
// more when the work pauses (used or committed grown), none for a quiet agent, nothing without
// --expose-gc.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { waitFor } from "../../test/support/poll.ts";
import { GROWTH_BYTES, GROWTH_SHARE, HeapSettler } from "./heap-settle.ts";

describe("the agent's heap settler", () => {
  test("collects during a burst past the allowance, and once when it pauses", async () => {
    const heap = { used: 10_000_000, committed: 12_000_000 };
    let collections = 0;
    const settler = new HeapSettler(
      () => {
        collections += 1;
        heap.used = 10_000_000;
        heap.committed = 12_000_000;
      },
      () => ({ ...heap }),
      50,
    );
    for (let call = 0; call < 100; call++) {
      heap.used += GROWTH_BYTES / 40; // a burst: 2.5 allowances' worth of garbage
      settler.touch();
    }
    assert.equal(collections, 2, "one collection per allowance during the burst");
    await waitFor(() => collections === 3, { what: "the collection once the work paused", timeoutMs: 5000 });
    // Pages committed while what is used stays put: none during the burst, one at the pause.
    for (let call = 0; call < 10; call++) {
      heap.committed += GROWTH_BYTES / 4;
      settler.touch();
    }
    assert.equal(collections, 3);
    await waitFor(() => collections === 4, { what: "the collection at the next pause", timeoutMs: 5000 });
    // Quiet: touches that allocate (almost) nothing collect nothing.
    heap.used += 1000;
    settler.touch();
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(collections, 4);
    settler.stop();
  });

  test("with a large live heap the allowance is a share of it, not the fixed 8 MiB", () => {
    const live = 100 * 2 ** 20;
    const heap = { used: live, committed: live + 2 ** 20 };
    let collections = 0;
    const settler = new HeapSettler(
      () => {
        collections += 1;
        heap.used = live;
      },
      () => ({ ...heap }),
      60_000,
    );
    for (let call = 0; call < 100; call++) {
      heap.used += (live * GROWTH_SHARE) / 40; // 2.5 allowances of half the live heap
      settler.touch();
    }
    settler.stop();
    assert.equal(collections, 2, "one per half of the live heap, where 8 MiB would have made 15");
  });

  test("without --expose-gc nothing is collected and no timer is left", () => {
    let reads = 0;
    const settler = new HeapSettler(undefined, () => {
      reads += 1;
      return { used: 0, committed: 0 };
    });
    for (let i = 0; i < 10; i++) settler.touch();
    assert.equal(reads, 1, "only the starting floor was read");
    assert.equal(settler.collections, 0);
  });
});
