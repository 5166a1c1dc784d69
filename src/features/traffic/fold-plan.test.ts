// How a fold splits the journal into transactions (pure): whole servers, oldest first, about a
// budget of journal text each, a server's weight being its largest row.
import assert from "node:assert/strict";
import { test } from "node:test";
import { foldBatches } from "./fold-plan.ts";

const row = (seq: number, serverId: string, bytes: number) => ({ seq, serverId, bytes });

test("a server's rows all go in one transaction, servers in the order of their oldest row", () => {
  const pending = [row(1, "b", 10), row(2, "a", 10), row(3, "b", 10), row(4, "a", 10), row(5, "c", 10)];
  assert.deepEqual(foldBatches(pending, 1000), [[1, 2, 3, 4, 5]]);
  assert.deepEqual(foldBatches(pending, 15), [[1, 3], [2, 4], [5]]);
});

test("a server weighs its largest row, not the sum of its polls: a backlog of polls does not split the fleet finer", () => {
  const polls = [1, 2, 3, 4, 5, 6].flatMap((poll) =>
    ["a", "b", "c", "d"].map((serverId, k) => row(poll * 10 + k, serverId, 400)),
  );
  const batches = foldBatches(polls, 1000);
  assert.equal(batches.length, 2, "two servers of 400 per 1000, whatever the number of polls");
  assert.deepEqual(
    batches.map((seqs) => seqs.length),
    [12, 12],
  );
});

test("a server bigger than the budget is a transaction of its own; nothing pending, no transaction", () => {
  assert.deepEqual(foldBatches([row(1, "big", 5000), row(2, "small", 1)], 1000), [[1], [2]]);
  assert.deepEqual(foldBatches([], 1000), []);
});
