// The fast path's heads written as text (head-text.ts): this Node.js keeps the head where the splice
// expects it, and a spliced head carries the same fields as writeHead's checked one, with the values
// of the moment. On the wire, both ways, fast-path.test.ts.
import assert from "node:assert/strict";
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { describe, test } from "node:test";
import { HeadFields, headSplicing, headTextIsWritable } from "./head-text.ts";

function response(method = "GET", minor = 1): ServerResponse {
  const request = new IncomingMessage(new Socket());
  request.method = method;
  request.httpVersionMajor = 1;
  request.httpVersionMinor = minor;
  return new ServerResponse(request);
}

/** The head's lines as written for `fields`, spliced or through writeHead's checks. */
function headOf(fields: HeadFields, splice: boolean, of = response()): string[] {
  const was = headSplicing.on;
  headSplicing.on = splice;
  try {
    fields.write(of);
  } finally {
    headSplicing.on = was;
  }
  return String((of as unknown as { _header: unknown })._header)
    .split("\r\n")
    .filter((line) => !line.startsWith("Date: "));
}

describe("heads written as text", () => {
  test("this Node.js keeps the head as text the fast path can write into (else every answer takes writeHead's checks)", () => {
    assert.equal(headTextIsWritable(), true);
    assert.equal(headSplicing.on, true);
  });

  test("a spliced head has the checked head's fields, Content-Length moved after the others, and each answer's values", () => {
    // biome-ignore format: name, value pairs
    const pairs = [
      "content-type", "text/plain; charset=utf-8",
      "etag", "",
      "content-length", "",
      "x-request-id", "",
      "x-content-type-options", "nosniff",
    ];
    const fields = new HeadFields(200, pairs, [3, 7], 4);
    for (const [etag, length, id] of [
      ['"a"', "12", "id-1"],
      ['"bb"', "7", "id-2"],
    ] as const) {
      pairs[3] = etag;
      pairs[5] = length;
      pairs[7] = id;
      const checked = headOf(fields, false);
      const spliced = headOf(fields, true);
      assert.equal(spliced[0], "HTTP/1.1 200 OK");
      // The status line and the four other fields, then Content-Length, then Node's own fields.
      const others = checked.filter((line) => line !== `content-length: ${length}`);
      assert.equal(others.length, checked.length - 1);
      assert.deepEqual(spliced, [...others.slice(0, 5), `content-length: ${length}`, ...others.slice(5)]);
      assert.deepEqual([...spliced].sort(), [...checked].sort());
      assert.ok(spliced.includes(`etag: ${etag}`) && spliced.includes(`x-request-id: ${id}`));
    }
  });

  test("Node still decides the connection: Connection: close for HTTP/1.0, no length for 304, keep-alive otherwise", () => {
    const ok = new HeadFields(200, ["content-length", "3", "x-a", "b"], [], 0);
    assert.deepEqual(headOf(ok, true, response("GET", 0)), [
      "HTTP/1.1 200 OK",
      "x-a: b",
      "content-length: 3",
      "Connection: close",
      "",
      "",
    ]);
    const notModified = new HeadFields(304, ["etag", '"e"', "x-a", "b"], [1], -1);
    const spliced = headOf(notModified, true);
    assert.deepEqual(spliced.slice(0, 4), [
      "HTTP/1.1 304 Not Modified",
      'etag: "e"',
      "x-a: b",
      "Connection: keep-alive",
    ]);
    assert.deepEqual([...spliced].sort(), [...headOf(notModified, false)].sort());
  });
});
