// The agent's desired state: what is recorded is what a re-apply sends, byte for byte (every byte
// value, through the compact form in memory and the base64 on disk), after a reload from the log,
// after a compaction into the snapshot (with changes recorded while it is written), and a torn last
// log line is ignored.
import assert from "node:assert/strict";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { CleanupStack, tempDir } from "../../test/support/v2ray.ts";
import { DesiredState } from "./desired-state.ts";

const stack = new CleanupStack();
after(() => stack.run());
const ADD_INBOUND = "/v2ray.core.app.proxyman.command.HandlerService/AddInbound";
const ALTER = "/v2ray.core.app.proxyman.command.HandlerService/AlterInbound";
const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i);
const userBytes = (i: number) =>
  Uint8Array.from([...everyByte.subarray(0, 40), i & 0xff, i >> 8, 0xff, 0x80]);

async function replayed(state: DesiredState): Promise<string[]> {
  const sent: string[] = [];
  const result = await state.replay(async (path, request) => {
    sent.push(`${path} ${Buffer.from(request).toString("hex")}`);
    return { ok: true, response: new Uint8Array() };
  });
  assert.equal(result.failed, 0);
  return sent.sort();
}

describe("the desired state", () => {
  test("re-applies exactly what was recorded, after reloads and compactions", async () => {
    const dir = tempDir(stack.add);
    const state = await DesiredState.load(dir);
    const expected = new Map<string, string>();
    await state.record({ kind: "add-inbound", tag: "in" }, ADD_INBOUND, everyByte);
    const inboundLine = `${ADD_INBOUND} ${Buffer.from(everyByte).toString("hex")}`;
    const pending: Promise<void>[] = [];
    for (let i = 0; i < 300; i++) {
      const email = `u-${i}`;
      pending.push(state.record({ kind: "add-user", tag: "in", email }, ALTER, userBytes(i)));
      expected.set(email, `${ALTER} ${Buffer.from(userBytes(i)).toString("hex")}`);
    }
    await Promise.all(pending);
    const want = () => [inboundLine, ...expected.values()].sort();
    assert.deepEqual(await replayed(state), want());
    assert.deepEqual(await replayed(await DesiredState.load(dir)), want(), "reloaded from the log");

    // Enough churn to compact (the log grows past twice the state plus 1,000 lines), with changes
    // recorded while the snapshot is being written.
    for (let round = 0; round < 8; round++) {
      const churn: Promise<void>[] = [];
      for (let i = 0; i < 200; i++) {
        const email = `u-${i}`;
        churn.push(state.record({ kind: "remove-user", tag: "in", email }, ALTER, new Uint8Array([1])));
        churn.push(state.record({ kind: "add-user", tag: "in", email }, ALTER, userBytes(i + round)));
        expected.set(email, `${ALTER} ${Buffer.from(userBytes(i + round)).toString("hex")}`);
      }
      await Promise.all(churn);
    }
    assert.ok(existsSync(join(dir, "desired.json")), "a snapshot was written");
    const snapshot = JSON.parse(readFileSync(join(dir, "desired.json"), "utf8")) as unknown[];
    assert.ok(snapshot.length >= 1 && snapshot.length <= 301, `snapshot of ${snapshot.length} lines`);
    assert.deepEqual(await replayed(state), want());
    assert.deepEqual(await replayed(await DesiredState.load(dir)), want(), "snapshot plus log");

    // A torn last line (a call never answered) is ignored.
    appendFileSync(join(dir, "desired.log"), '{"op":"del-inbound","ta');
    const reloaded = await DesiredState.load(dir);
    assert.deepEqual(await replayed(reloaded), want());
    assert.deepEqual(reloaded.size, { inbounds: 1, users: 300 });
  });
});
