// The fast path's answers written as text (head-text.ts): this Node.js keeps the head where the
// splice expects it; a spliced answer carries the same fields and body as writeHead's checked one,
// with the values of the moment, in one write; Node still decides the connection. On the wire, both
// ways, fast-path.test.ts.
import assert from "node:assert/strict";
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { endWith, HeadFields, headSplicing, headTextIsWritable } from "./head-text.ts";

/** What a response to a request of this method and HTTP/1.x version writes, chunk by chunk, spliced or not. */
function written(
  answer: (response: ServerResponse) => void,
  splice: boolean,
  method = "GET",
  minor = 1,
): string[] {
  const request = new IncomingMessage(new Socket());
  request.method = method;
  request.httpVersionMajor = 1;
  request.httpVersionMinor = minor;
  const response = new ServerResponse(request);
  const chunks: string[] = [];
  const socket = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk.toString("latin1"));
      callback();
    },
  });
  response.assignSocket(socket as unknown as Socket);
  const was = headSplicing.on;
  headSplicing.on = splice;
  try {
    answer(response);
  } finally {
    headSplicing.on = was;
  }
  return chunks;
}

/** The head's lines (Date left out) and the body. */
function partsOf(chunks: string[]): { lines: string[]; body: string } {
  const text = chunks.join("");
  const end = text.indexOf("\r\n\r\n");
  assert.ok(end > 0, JSON.stringify(text));
  const lines = text
    .slice(0, end)
    .split("\r\n")
    .filter((line) => !line.startsWith("Date: "));
  return { lines, body: text.slice(end + 4) };
}

describe("answers written as text", () => {
  test("this Node.js keeps the head as text the fast path can write into (else every answer takes writeHead's checks)", () => {
    assert.equal(headTextIsWritable(), true);
    assert.equal(headSplicing.on, true);
  });

  test("the check refuses a Node.js whose end() does not send the head text as it was left", () => {
    const end = ServerResponse.prototype.end;
    ServerResponse.prototype.end = function (this: ServerResponse, ...args: unknown[]) {
      const own = this as unknown as { _header: string };
      own._header = own._header.replace("x-probe: 1\r\n", "");
      return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as typeof end;
    try {
      assert.equal(headTextIsWritable(), false);
    } finally {
      ServerResponse.prototype.end = end;
    }
    assert.equal(headTextIsWritable(), true);
  });

  test("a spliced answer has the checked one's fields and body, Content-Length after the others, each answer's values, in one write", () => {
    // biome-ignore format: name, value pairs
    const pairs = [
      "content-type", "text/plain; charset=utf-8",
      "etag", "",
      "content-length", "",
      "x-request-id", "",
      "x-content-type-options", "nosniff",
    ];
    const fields = new HeadFields(200, pairs, [3, 7], 4);
    for (const [etag, body, id] of [
      ['"a"', "aGVsbG8=", "id-1"],
      ['"bb"', "d29ybGQh\u00ff", "id-2"],
    ] as const) {
      pairs[3] = etag;
      pairs[5] = String(body.length);
      pairs[7] = id;
      const checked = partsOf(written((r) => fields.answer(r, body), false));
      const chunks = written((r) => fields.answer(r, body), true);
      assert.equal(chunks.length, 1, "head and body in one write");
      const spliced = partsOf(chunks);
      assert.equal(spliced.body, body);
      assert.equal(checked.body, body);
      // The status line and the four other fields, then Content-Length, then Node's own fields.
      const length = `content-length: ${body.length}`;
      const others = checked.lines.filter((line) => line !== length);
      assert.equal(others.length, checked.lines.length - 1);
      assert.deepEqual(spliced.lines, [...others.slice(0, 5), length, ...others.slice(5)]);
      assert.ok(spliced.lines.includes(`etag: ${etag}`) && spliced.lines.includes(`x-request-id: ${id}`));
    }
  });

  test("Node still decides the connection: Connection: close for HTTP/1.0, no body for HEAD, none for 304, keep-alive otherwise", () => {
    const ok = new HeadFields(200, ["content-length", "3", "x-a", "b"], [], 0);
    const old = partsOf(written((r) => ok.answer(r, "abc"), true, "GET", 0));
    assert.deepEqual(old, {
      lines: ["HTTP/1.1 200 OK", "x-a: b", "content-length: 3", "Connection: close"],
      body: "abc",
    });
    const head = partsOf(written((r) => ok.answer(r, undefined), true, "HEAD"));
    assert.deepEqual(head.lines.slice(0, 4), [
      "HTTP/1.1 200 OK",
      "x-a: b",
      "content-length: 3",
      "Connection: keep-alive",
    ]);
    assert.equal(head.body, "");
    const notModified = new HeadFields(304, ["etag", '"e"', "x-a", "b"], [1], -1);
    const spliced = partsOf(written((r) => notModified.answer(r, undefined), true));
    assert.deepEqual(spliced.lines.slice(0, 4), [
      "HTTP/1.1 304 Not Modified",
      'etag: "e"',
      "x-a: b",
      "Connection: keep-alive",
    ]);
    assert.deepEqual(
      [...spliced.lines].sort(),
      [...partsOf(written((r) => notModified.answer(r, undefined), false)).lines].sort(),
    );
  });

  test("a checked head's body goes out with it in one write (endWith)", () => {
    const answer = (r: ServerResponse) => {
      r.writeHead(200, ["content-type", "text/plain", "content-length", "4"]);
      endWith(r, "body");
    };
    const chunks = written(answer, true);
    assert.equal(chunks.length, 1);
    assert.deepEqual(partsOf(chunks), partsOf(written(answer, false)));
    assert.equal(partsOf(chunks).body, "body");
  });
});
