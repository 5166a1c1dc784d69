// The cache fast path over real HTTP, on whichever dialect DATABASE_URL selects: a hit is answered
// before Fastify with the same status, headers and bytes Fastify's route gives; everything else
// (misses, HEAD of a miss, uppercase ids, query strings, unknown users, other routes, a client's own
// X-Request-Id) falls through to Fastify exactly once, and a miss is counted once. On raw sockets, the
// fast path's heads carry Node's own connection fields and close (or keep) the connection as the
// route's do: keep-alive, pipelining, HTTP/1.0, Connection: close, a socket's last request.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { request } from "../../../test/support/templates.ts";
import { withCacheFastPath } from "./fast-path.ts";

let t: TestApp;
let server: Server;
let base: string;
let userId: string;
/** URLs the fast path handed to Fastify. */
const fellThrough: string[] = [];
/** Every request the server was given, in order. */
const given: IncomingMessage[] = [];

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1000" });
  const serverId = (await registerServer(t, await freePort(), { hostname: "vpn.example.com" })).id;
  const template = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
  const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
  userId = ((await request(t, "POST", "/api/users", { name: "Zoë fast" })).json() as { id: string }).id;
  await grant(t, serverId, inbound.id, { user_id: userId });
  // The composition app.ts makes, with a counting hand-over to Fastify's own handler.
  const listener = withCacheFastPath(t.deps.services.subscriptions, (req, res) => {
    fellThrough.push(`${req.method} ${req.url}`);
    t.app.routing(req, res);
  });
  server = createServer((req, res) => {
    given.push(req);
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

type Answer = { status: number; headers: Record<string, string>; body: string };

async function fetchSub(path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(5000) });
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== "date" && name !== "x-request-id") headers[name] = value;
  });
  assert.match(res.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/);
  return { status: res.status, headers, body: await res.text() };
}

/** The request, and whether Fastify saw it. */
async function viaWhich(path: string, init: RequestInit = {}) {
  const before = fellThrough.length;
  const answer = await fetchSub(path, init);
  return { answer, fastify: fellThrough.length > before };
}

/**
 * What came back for raw request bytes: the answers' heads (lines, in order), and whether the server
 * closed the connection after them: one more request (GET /health) is then sent, which an open
 * connection answers and a closed one does not.
 */
async function exchange(
  raw: string,
  answers: number,
  isHead = false,
): Promise<{ heads: string[][]; closed: boolean }> {
  const { port } = server.address() as AddressInfo;
  const socket = connect(port, "127.0.0.1");
  socket.setTimeout(5000);
  let data = Buffer.alloc(0);
  const heads: string[][] = [];
  return await new Promise((resolve, reject) => {
    const done = (closed: boolean) => {
      socket.destroy();
      resolve({ heads, closed });
    };
    socket.on("timeout", () =>
      reject(new Error(`no answer and no close in 5 s after ${JSON.stringify(raw.slice(0, 300))}`)),
    );
    socket.on("error", () => undefined); // the follow-up's write to a closed connection: "close" follows
    socket.on("close", () => done(true));
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      for (;;) {
        const end = data.indexOf("\r\n\r\n");
        if (end < 0) return;
        const lines = data.subarray(0, end).toString("latin1").split("\r\n");
        const length = Number(lines.find((l) => /^content-length:/i.test(l))?.split(":")[1] ?? "0");
        const size = end + 4 + (isHead && heads.length < answers ? 0 : length);
        if (data.length < size) return;
        data = data.subarray(size);
        if (heads.length === answers) return done(false); // the follow-up's answer: still open
        heads.push(lines);
        if (heads.length === answers) socket.write("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
      }
    });
    socket.write(raw);
  });
}

/** A head's lines without those that differ from answer to answer, sorted: the same set whoever wrote it. */
const fieldsOf = (lines: string[]) => lines.filter((l) => !/^(date|x-request-id):/i.test(l)).sort();

/** A request body larger than a stream's buffer (16 KiB). */
const BIG_BODY = "b".repeat(100_000);

/** The wire test's cases, each answered by the fast path and by the route (an uppercase id). */
async function wireHeads(): Promise<void> {
  const etag = (await fetchSub(`/sub/${userId}`)).headers.etag ?? ""; // in memory
  const get = (id: string, more = "") => `GET /sub/${id} HTTP/1.1\r\nHost: x\r\n${more}\r\n`;
  const upper = userId.toUpperCase(); // the route's answer (Fastify's writeHead) to compare with
  const cases: {
    name: string;
    raw: (id: string) => string;
    answers: number;
    closed: boolean;
    isHead?: boolean;
    status?: string;
  }[] = [
    { name: "keep-alive, pipelined", raw: (id) => get(id) + get(id), answers: 2, closed: false },
    { name: "HTTP/1.0", raw: (id) => `GET /sub/${id} HTTP/1.0\r\n\r\n`, answers: 1, closed: true },
    {
      name: "HTTP/1.0 keep-alive",
      raw: (id) => `GET /sub/${id} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`,
      answers: 1,
      closed: false,
    },
    { name: "Connection: close", raw: (id) => get(id, "Connection: close\r\n"), answers: 1, closed: true },
    {
      // A body on a GET is read off the wire and dropped (Node's dump), so the next request parses;
      // one larger than a stream's buffer that nobody read would stop the socket.
      name: "a GET with a body, then another",
      raw: (id) => get(id, `Content-Length: ${BIG_BODY.length}\r\n`).concat(BIG_BODY, get(id)),
      answers: 2,
      closed: false,
    },
    {
      name: "a GET with a chunked body, then another",
      raw: (id) =>
        get(id, "Transfer-Encoding: chunked\r\n").concat(
          `${BIG_BODY.length.toString(16)}\r\n${BIG_BODY}\r\n0\r\n\r\n`,
          get(id),
        ),
      answers: 2,
      closed: false,
    },
    {
      name: "If-None-Match",
      raw: (id) => get(id, `If-None-Match: ${etag}\r\n`),
      answers: 1,
      closed: false,
      status: "HTTP/1.1 304 Not Modified",
    },
    {
      name: "HEAD",
      raw: (id) => `HEAD /sub/${id} HTTP/1.1\r\nHost: x\r\n\r\n`,
      answers: 1,
      closed: false,
      isHead: true,
    },
  ];
  for (const c of cases) {
    const before = fellThrough.length;
    const fast = await exchange(c.raw(userId), c.answers, c.isHead);
    assert.deepEqual(
      fellThrough.slice(before).filter((seen) => seen !== "GET /health"),
      [],
      `${c.name}: answered by the fast path (the follow-up /health by Fastify)`,
    );
    const routed = await exchange(c.raw(upper), c.answers, c.isHead);
    assert.equal(fast.heads.length, c.answers, c.name);
    assert.equal(fast.closed, c.closed, `${c.name}: closed after the answer`);
    assert.equal(routed.closed, c.closed, `${c.name}: the route closes alike`);
    for (const [i, head] of fast.heads.entries()) {
      assert.equal(head[0], c.status ?? "HTTP/1.1 200 OK", c.name);
      assert.deepEqual(fieldsOf(head), fieldsOf(routed.heads[i] ?? []), `${c.name}: answer ${i + 1}`);
    }
  }
  const [keptAlive] = (await exchange(get(userId), 1)).heads;
  assert.ok(keptAlive?.includes("Connection: keep-alive") && keptAlive.includes("Keep-Alive: timeout=5"));
  // The last request a socket may carry (server.maxRequestsPerSocket): Node says Connection: close, as for any answer.
  server.maxRequestsPerSocket = 2;
  try {
    const fast = await exchange(get(userId) + get(userId), 2);
    const routed = await exchange(get(upper) + get(upper), 2);
    assert.equal(fast.closed, routed.closed);
    assert.deepEqual(fast.heads.map(fieldsOf), routed.heads.map(fieldsOf));
    assert.ok(fast.heads[0]?.includes("Keep-Alive: timeout=5, max=2"));
    assert.ok(fast.heads[1]?.includes("Connection: close"));
  } finally {
    server.maxRequestsPerSocket = 0;
  }
}

describe("the subscription cache fast path", () => {
  test("a miss goes to Fastify (counted once); the hit after it is the same answer without Fastify", async () => {
    const stats = () => t.deps.services.subscriptions.stats();
    const { misses, hits } = stats();
    const first = await viaWhich(`/sub/${userId}`);
    assert.equal(first.fastify, true);
    assert.equal(
      stats().misses,
      misses + 1,
      "one database read, though the fast path and the route both asked",
    );
    const second = await viaWhich(`/sub/${userId}`);
    assert.equal(second.fastify, false);
    assert.equal(stats().hits, hits + 1);
    assert.equal(second.answer.status, 200);
    assert.deepEqual(second.answer, first.answer);
    assert.equal(second.answer.headers["content-length"], String(second.answer.body.length));
    assert.ok(Buffer.from(second.answer.body, "base64").toString().startsWith("vless://"));
  });

  test("HEAD and If-None-Match are answered from the cache like the route answers them", async () => {
    const get = await viaWhich(`/sub/${userId}`);
    const head = await viaWhich(`/sub/${userId}`, { method: "HEAD" });
    assert.equal(head.fastify, false);
    assert.equal(head.answer.body, "");
    // The route's HEAD (an uppercase id is not the fast path's) gives the same headers, keep-alive included.
    const routedHead = await viaWhich(`/sub/${userId.toUpperCase()}`, { method: "HEAD" });
    assert.equal(routedHead.fastify, true);
    assert.deepEqual(head.answer, routedHead.answer);
    assert.equal(head.answer.headers["content-length"], get.answer.headers["content-length"]);
    assert.equal(head.answer.headers.etag, get.answer.headers.etag);
    const etag = get.answer.headers.etag ?? "";
    const conditional = await viaWhich(`/sub/${userId}`, { headers: { "if-none-match": etag } });
    assert.equal(conditional.fastify, false);
    assert.equal(conditional.answer.status, 304);
    assert.equal(conditional.answer.body, "");
    assert.deepEqual(
      [conditional.answer.headers.etag, conditional.answer.headers["subscription-userinfo"]],
      [etag, get.answer.headers["subscription-userinfo"]],
    );
    // The route's own 304 (inject skips the fast path) carries the same headers.
    const routed = await t.app.inject({
      method: "GET",
      url: `/sub/${userId}`,
      headers: { "if-none-match": etag },
    });
    assert.equal(routed.statusCode, 304);
    for (const name of ["etag", "cache-control", "subscription-userinfo"]) {
      assert.equal(conditional.answer.headers[name], routed.headers[name], name);
    }
  });

  test("what the fast path does not answer reaches Fastify: uppercase ids, queries, unknown users, other routes", async () => {
    const cached = await fetchSub(`/sub/${userId}`);
    for (const path of [`/sub/${userId.toUpperCase()}`, `/sub/${userId}?flag=clash`, `/sub/${userId}/`]) {
      const { answer, fastify } = await viaWhich(path);
      assert.equal(fastify, true, path);
      assert.deepEqual(answer, cached, path);
    }
    // As long as a key alone, with a "/" or "?" in it: the fast path reads them as a key, whose parse refuses them.
    for (const path of [
      `/sub/${userId.slice(0, 35)}/`,
      `/sub/${userId.slice(0, 33)}?f=`,
      `/sub/${"a".repeat(31)}/`,
      `/sub/${"b".repeat(30)}?x`,
    ]) {
      const { answer, fastify } = await viaWhich(path);
      assert.equal(fastify, true, path);
      assert.equal(answer.status, 404, path);
      assert.equal(answer.headers["content-type"], "application/problem+json; charset=utf-8", path);
    }
    const unknown = await viaWhich("/sub/00000000-0000-4000-8000-000000000000");
    assert.deepEqual([unknown.fastify, unknown.answer.status], [true, 404]);
    assert.equal(unknown.answer.headers["content-type"], "application/problem+json; charset=utf-8");
    const health = await viaWhich("/health");
    assert.deepEqual([health.fastify, health.answer.status], [true, 200]);
    const post = await viaWhich(`/sub/${userId}`, { method: "POST" });
    assert.deepEqual([post.fastify, post.answer.status, post.answer.headers.allow], [true, 405, "GET, HEAD"]);
  });

  test("the head on the wire: Node's own connection fields for keep-alive, HTTP/1.0, Connection: close, pipelining, HEAD, 304, a socket's last request", async () => {
    await wireHeads();
  });

  test("after its answer, every request is read to its end by Node (bodies sized, chunked and none), the next one on the connection answered", async () => {
    const get = (more = "") => `GET /sub/${userId} HTTP/1.1\r\nHost: x\r\n${more}\r\n`;
    const from = given.length;
    const fellFrom = fellThrough.length;
    const { heads } = await exchange(
      `${get()}${get("Content-Length: 5\r\n")}hello${get("Transfer-Encoding: chunked\r\n")}0\r\n\r\n`,
      3,
    );
    assert.deepEqual(
      heads.map((lines) => lines[0]),
      ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK"],
    );
    assert.deepEqual(fellThrough.slice(fellFrom), ["GET /health"], "the three answered by the fast path");
    const requests = given.slice(from, from + 3);
    assert.equal(requests.length, 3);
    await waitFor(() => requests.every((request) => request.complete && request.destroyed), {
      what: "the three requests read to their end",
    });
  });

  test("a client's own X-Request-Id is left to Fastify, which echoes it", async () => {
    const res = await fetch(`${base}/sub/${userId}`, {
      headers: { "x-request-id": "trace-42" },
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-request-id"), "trace-42");
    assert.equal(fellThrough.at(-1), `GET /sub/${userId}`);
  });

  test("the app's own server has the fast path and Fastify's keep-alive timeout", async () => {
    await t.app.listen({ host: "127.0.0.1", port: 0 });
    const address = t.app.server.address() as AddressInfo;
    const { hits } = t.deps.services.subscriptions.stats();
    const res = await fetch(`http://127.0.0.1:${address.port}/sub/${userId}`, {
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(res.status, 200);
    assert.equal(t.deps.services.subscriptions.stats().hits, hits + 1);
    assert.equal(res.headers.get("keep-alive"), "timeout=72");
  });
});
