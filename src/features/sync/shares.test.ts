// The split of servers over instances (pure): every server once, an even split, the same answer
// whatever order the lists come in, and a join moves servers only to the instance that joined.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { shareOut } from "./shares.ts";

const servers = (n: number) => [...Array(n).keys()].map((i) => `server-${String(i).padStart(3, "0")}`);
const sizes = (shares: Map<string, string[]>) => [...shares.values()].map((ids) => ids.length);

describe("sharing servers out over instances", () => {
  test("every server goes to exactly one instance, and shares differ by at most one", () => {
    for (const [n, k] of [
      [0, 1],
      [1, 2],
      [2, 2],
      [4, 3],
      [5, 3],
      [50, 2],
      [50, 3],
      [7, 7],
      [3, 5],
    ] as const) {
      const names = [...Array(k).keys()].map((i) => `host:${100 + i}:abc`);
      const shares = shareOut(servers(n), names);
      const all = [...shares.values()].flat();
      assert.deepEqual(all.sort(), servers(n), `${n} over ${k}: each server once`);
      assert.ok(
        Math.max(...sizes(shares)) - Math.min(...sizes(shares)) <= 1,
        `${n} over ${k}: ${sizes(shares)}`,
      );
    }
  });

  test("no instances: nobody holds anything", () => {
    assert.equal(shareOut(servers(3), []).size, 0);
  });

  test("the order of the lists does not matter: every instance works out the same split", () => {
    const names = ["b:2:x", "a:1:y", "c:3:z"];
    const one = shareOut(servers(20), names);
    const other = shareOut(servers(20).reverse(), [...names].reverse());
    assert.deepEqual([...one.entries()].sort(), [...other.entries()].sort());
  });

  test("a join moves about the joiner's share, not the whole fleet", () => {
    const before = shareOut(servers(50), ["a:1:x", "b:2:y"]);
    const after = shareOut(servers(50), ["a:1:x", "b:2:y", "c:3:z"]);
    assert.deepEqual(sizes(after).sort(), [16, 17, 17]);
    const owner = (shares: Map<string, string[]>, id: string) =>
      [...shares].find(([, ids]) => ids.includes(id))?.[0];
    const moved = servers(50).filter((id) => owner(before, id) !== owner(after, id));
    // Rendezvous ranks keep servers where they were; the bound on share sizes may move a few more.
    assert.ok(moved.length <= 20, `${moved.length} of 50 servers moved; the joiner's share is 16 or 17`);
  });
});
