// The fold loop's one decision of its own: the lifecycle tick follows a fold only when the totals
// moved (rows folded, or a poll that counted straight into them), so an idle fleet's empty polls do
// not run it a second time beside the lifecycle job (issue 52). The fold itself is the database's
// (traffic.test.ts, both dialects); here it is a stand-in that says what it folded.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import pino from "pino";
import type { Folded } from "../features/traffic/traffic.repository.ts";
import { trafficFolder } from "./fold-traffic.ts";

function folderWith(rowsPerFold: number[]) {
  const ticks: number[] = [];
  let folds = 0;
  const folder = trafficFolder({
    traffic: {
      async fold(): Promise<Folded> {
        const rows = rowsPerFold[folds] ?? 0;
        folds += 1;
        return { rows, users: rows, started: [] };
      },
    },
    logger: pino({ level: "silent" }),
    afterFold: async () => {
      ticks.push(folds);
    },
  });
  return { folder, ticks, folds: () => folds };
}

describe("traffic fold loop", () => {
  test("the lifecycle tick follows a fold that folded rows, not an empty one", async () => {
    const { folder, ticks, folds } = folderWith([0, 3, 0]);
    for (let i = 0; i < 3; i++) {
      folder.request();
      await folder.idle();
    }
    assert.equal(folds(), 3);
    assert.deepEqual(ticks, [2]);
    await folder.drain();
  });

  test("a poll that counted straight into the totals (an agent's batches) gets its tick with nothing folded", async () => {
    const { folder, ticks } = folderWith([0, 0]);
    folder.request(true);
    await folder.idle();
    folder.request(false);
    await folder.idle();
    assert.deepEqual(ticks, [1]);
    await folder.drain();
  });
});
