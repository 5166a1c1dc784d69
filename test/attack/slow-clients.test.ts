// Clients that hold a connection by sending slowly: the head or the body trickles in, or never ends.
// Fastify's default is no limit on the whole request; the service gives PORTCULLIS_REQUEST_TIMEOUT_MS
// (the head at most 60 s of it), then answers 408 problem+json and closes. Here the limit is 1 s,
// so Node checks it every 250 ms: each answer comes between 1 and about 2 s after the connection.
import assert from "node:assert/strict";
import { type AddressInfo, connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../src/config/config.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type RawAnswer, rawBytes, rawRequest } from "../support/raw-http.ts";

const LIMIT_MS = 1000;
/** Far beyond the limit and Node's check interval: an answer after this would be a hang. */
const DEADLINE_MS = 8000;

let t: TestApp;
let port: number;
before(async () => {
  t = await createTestApp({ PORTCULLIS_REQUEST_TIMEOUT_MS: String(LIMIT_MS) });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  port = (t.app.server.address() as AddressInfo).port;
});
after(async () => {
  await t.close();
});

async function timed(send: () => Promise<RawAnswer>): Promise<{ answer: RawAnswer; ms: number }> {
  const started = performance.now();
  const answer = await send();
  return { answer, ms: performance.now() - started };
}

function assertTimedOut({ answer, ms }: { answer: RawAnswer; ms: number }): void {
  assert.equal(answer.status, 408);
  assert.match(answer.headers["content-type"] ?? "", /^application\/problem\+json/);
  assert.equal((JSON.parse(answer.body) as { code: string }).code, "request_timeout");
  assert.ok(ms >= LIMIT_MS - 50, `answered after ${ms.toFixed(0)} ms, before the limit`);
}

describe("slow clients", () => {
  test("the config keeps the limit and takes 60 s by default", () => {
    assert.equal(t.deps.config.requestTimeoutMs, LIMIT_MS);
    assert.equal(t.app.server.requestTimeout, LIMIT_MS);
    assert.equal(t.app.server.headersTimeout, LIMIT_MS);
    assert.equal(loadConfig({}).requestTimeoutMs, 60_000);
    assert.throws(() => loadConfig({ PORTCULLIS_REQUEST_TIMEOUT_MS: "0" }), /PORTCULLIS_REQUEST_TIMEOUT_MS/);
  });

  test("a body that never finishes: 408 and the connection closed", async () => {
    const head =
      "POST /api/auth/token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
      "content-length: 100\r\n\r\n";
    assertTimedOut(await timed(() => rawBytes(port, Buffer.from(`${head}{"username":`), DEADLINE_MS)));
  });

  test("a head that never finishes (no blank line), on /sub and on the API: 408", async () => {
    for (const target of ["/sub/00000000-0000-4000-8000-000000000000", "/api/users"]) {
      const bytes = Buffer.from(`GET ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: 1\r\n`);
      assertTimedOut(await timed(() => rawBytes(port, bytes, DEADLINE_MS)));
    }
  });

  test("a body sent a byte at a time, each well inside the limit, still ends at the limit", async () => {
    const answer = await new Promise<{ data: string; ms: number }>((resolve, reject) => {
      const started = performance.now();
      const socket = connect(port, "127.0.0.1");
      let data = "";
      socket.write(
        "POST /api/auth/token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
          "content-length: 1000\r\n\r\n",
      );
      const drip = setInterval(() => socket.writable && socket.write(" "), 100);
      const deadline = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no answer within ${DEADLINE_MS} ms`));
      }, DEADLINE_MS);
      socket.on("data", (chunk) => {
        data += chunk.toString("latin1");
      });
      socket.on("error", () => {}); // a write after the server closed: the answer is what counts
      socket.on("close", () => {
        clearInterval(drip);
        clearTimeout(deadline);
        resolve({ data, ms: performance.now() - started });
      });
    });
    assert.match(answer.data, /^HTTP\/1\.1 408 /);
    assert.ok(answer.ms >= LIMIT_MS - 50, `answered after ${answer.ms.toFixed(0)} ms`);
  });

  test("a request sent whole is answered as before", async () => {
    const answer = await rawRequest(port, { target: "/health" });
    assert.equal(answer.status, 200);
  });
});
