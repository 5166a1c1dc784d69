// The core's output split into bounded lines: a line of many megabytes without a newline is held to
// the bound and cut (its last, possibly partial, word dropped); a flood of lines keeps every line.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BoundedLines } from "./bounded-lines.ts";

describe("the core's output as bounded lines", () => {
  test("a 64 MB line without a newline is held to the bound, then cut at a word", () => {
    const lines: string[] = [];
    const splitter = new BoundedLines((line) => lines.push(line), 1000);
    const megabyte = Buffer.alloc(1 << 20, "ab ");
    let most = 0;
    for (let i = 0; i < 64; i++) {
      splitter.push(megabyte);
      most = Math.max(most, splitter.buffered);
    }
    assert.ok(most <= 1000, `held ${most} bytes`);
    assert.deepEqual(lines, []);
    splitter.push(Buffer.from("tail\nnext line\r\nlast"));
    splitter.end();
    assert.equal(lines.length, 3);
    const [cut = "", next, last] = lines;
    assert.ok(cut.length <= 1001, `cut line of ${cut.length}`);
    assert.match(cut, /^(ab )+…$/, "cut after the last whole word");
    assert.equal(next, "next line");
    assert.equal(last, "last");
    assert.equal(splitter.buffered, 0);
  });

  test("a cut in the middle of a credential drops its start rather than hand it out", () => {
    const lines: string[] = [];
    const splitter = new BoundedLines((line) => lines.push(line), 40);
    const secret = "Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTA";
    splitter.push(Buffer.from(`invalid user: ${secret} from 1.2.3.4\n`));
    assert.deepEqual(lines, ["invalid user: …"]);
  });

  test("lines split across chunks, and a multibyte character across them, come out whole", () => {
    const lines: string[] = [];
    const splitter = new BoundedLines((line) => lines.push(line));
    const bytes = Buffer.from("first ✓ line\nsecond\n");
    for (let i = 0; i < bytes.length; i++) splitter.push(bytes.subarray(i, i + 1));
    assert.deepEqual(lines, ["first ✓ line", "second"]);
  });

  test("a flood of 200,000 lines in big chunks: every line arrives, nothing is held after", () => {
    let count = 0;
    let longest = 0;
    const splitter = new BoundedLines((line) => {
      count += 1;
      longest = Math.max(longest, line.length);
    });
    const chunk = Buffer.from(
      "127.0.0.1:5000 accepted tcp:example.com:443 email: u-0123456789abcdef\n".repeat(1000),
    );
    for (let i = 0; i < 200; i++) splitter.push(chunk);
    assert.equal(count, 200_000);
    assert.equal(longest, 69);
    assert.equal(splitter.buffered, 0);
  });
});
