// The core's log lines as they leave a node: credentials masked, emails and addresses kept, bounded.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CORE_LOG_LINE_MAX, CORE_LOG_LINES, MASK, redactLogLine, redactLogLines } from "./core-log.ts";

describe("core log lines", () => {
  test("an access line keeps its address and email; a UUID or a long base64 run is masked", () => {
    const access =
      "2026/12/02 09:40:00 127.0.0.1:50412 accepted tcp:127.0.0.1:8080 [in >> direct] email: u-0123456789abcdef";
    assert.equal(redactLogLine(access), access);
    const uuid = "b831381d-6324-4d53-ad4f-8cda48b30811";
    const withUuid = redactLogLine(`failed to read request header > invalid user ${uuid}`);
    assert.ok(!withUuid.includes(uuid) && withUuid.includes(MASK), withUuid);
    const trojan = "Zk9xJ2pLq7RtY3vW1aB5cD8e"; // 24 random base64url characters
    const ss2022 = "kP3+u9/QwErTyUiOpAsDfGhJkLzXcVbNm1234567890=";
    for (const secret of [trojan, ss2022]) {
      const line = redactLogLine(`password ${secret} refused`);
      assert.ok(!line.includes(secret), line);
    }
  });

  test("control and bidi characters go; a long line is cut; only the last lines are kept", () => {
    assert.equal(redactLogLine("a\u001b[31mb\u202ec\u0000"), "a[31mbc");
    assert.equal(redactLogLine("x ".repeat(2000)).length, CORE_LOG_LINE_MAX + 1);
    const many = Array.from({ length: CORE_LOG_LINES + 50 }, (_, i) => `line ${i}`);
    const kept = redactLogLines(many);
    assert.equal(kept.length, CORE_LOG_LINES);
    assert.equal(kept[0], "line 50");
  });
});
