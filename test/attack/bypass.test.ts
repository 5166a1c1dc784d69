// The route walk: for every protected operation in the OpenAPI document, the request targets an
// outsider would try to slip past authentication — percent-encoded letters (upper- and lower-case
// hex), doubled and dot segments, encoded slashes and dots, absolute-form targets, other schemes —
// sent byte for byte over a raw socket without a token. None may reach a handler: the answer is
// 401 (the route matched and demanded a token) or a 404/400 problem (nothing matched).
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../support/app.ts";
import { fillPath, type Operation, operationsOf } from "../support/openapi-ops.ts";
import { type RawAnswer, rawRequest } from "../support/raw-http.ts";

let t: TestApp;
let port: number;
let operations: Operation[];
const tally = { requests: 0, byStatus: new Map<number, number>() };

before(async () => {
  t = await createTestApp({}, { docsUi: true });
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  port = (t.app.server.address() as AddressInfo).port;
  operations = operationsOf((await t.app.inject({ url: "/api/openapi.json" })).json());
});
after(async () => {
  const classes = [...tally.byStatus].map(([status, n]) => `${status}×${n}`).join(", ");
  console.log(`route walk: ${tally.requests} requests without a token; ${classes}`);
  await t.close();
});

const ID = "7d9c1c1e-9f0a-4c55-8a43-0d3b5f0e2a11";

function hex(char: string, upper: boolean): string {
  const code = char.charCodeAt(0).toString(16).padStart(2, "0");
  return `%${upper ? code.toUpperCase() : code}`;
}

/** Every spelling of `path` the walk tries; `path` is canonical (params filled). */
export function spellings(path: string, port: number): string[] {
  const out = new Set<string>([path]);
  for (let i = 0; i < path.length; i++) {
    const char = path[i] as string;
    if (!/[A-Za-z]/.test(char)) continue;
    for (const upper of [true, false]) out.add(path.slice(0, i) + hex(char, upper) + path.slice(i + 1));
  }
  const segments = path.split("/").slice(1);
  for (let i = 0; i <= segments.length; i++) {
    const head = `/${segments.slice(0, i).join("/")}`.replace(/^\/$/, "");
    const tail = segments.slice(i).join("/");
    const join = (middle: string) => `${head}${middle}${tail}`;
    out.add(join("//"));
    out.add(join("/./"));
    out.add(join("/%2e/"));
    out.add(join("/%2E/"));
    out.add(join("/x/../"));
    out.add(join("/x/%2e%2e/"));
    out.add(join("/x/..%2f"));
  }
  out.add(path.replace(/\//g, "%2f"));
  out.add(path.replace(/\//g, "%2F"));
  out.add(`/${path.slice(1).replace("/", "%2F")}`);
  out.add(path.replace(/\//g, "\\"));
  out.add(`${path}/`);
  out.add(`${path}/.`);
  out.add(`${path}%20`);
  out.add(`${path};x=1`);
  out.add(`${path}%00`);
  out.add(`${path}?x=1`);
  out.add(`${path}#frag`);
  out.add(path.toUpperCase());
  for (const origin of [
    "http://x",
    "http://127.0.0.1",
    `http://127.0.0.1:${port}`,
    "HTTP://X",
    "https://x",
    "http://user:pass@x",
    "ws://x",
    "http://x:99999",
  ]) {
    out.add(`${origin}${path}`);
    out.add(`${origin}${path.replace("/api/", "/%61pi/")}`);
  }
  out.add(`//x${path}`);
  out.add(`*${path}`);
  return [...out];
}

async function send(
  method: string,
  target: string,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  const answer = await rawRequest(port, { method, target, headers });
  tally.requests++;
  tally.byStatus.set(answer.status, (tally.byStatus.get(answer.status) ?? 0) + 1);
  return answer;
}

/**
 * An answer that proves no handler ran: 401 from the auth hook, a 404/400 problem for no route, or a
 * 405 problem for a path the router knows under other methods only (e.g. `GET /api/api-keys//`,
 * which the router reads as DELETE /api/api-keys/:id with an empty id).
 */
function assertStopped(answer: RawAnswer, what: string, isHead = false): void {
  assert.match(answer.headers["content-type"] ?? "", /^application\/problem\+json/, what);
  if (isHead) {
    // No body to read the code from: the status alone must say "stopped".
    assert.ok([400, 401, 404, 405].includes(answer.status), `${what} → ${answer.status}`);
    return;
  }
  const body = JSON.parse(answer.body) as { code?: string; status?: number };
  const allowed =
    answer.status === 401 ||
    (answer.status === 404 && body.code === "route_not_found") ||
    (answer.status === 405 && body.code === "method_not_allowed" && answer.headers.allow !== undefined) ||
    (answer.status === 400 && ["bad_url", "malformed_request"].includes(body.code ?? ""));
  assert.ok(allowed, `${what} → ${answer.status} ${answer.body.slice(0, 200)}`);
  assert.equal(body.status, answer.status, what);
}

/** Runs `work` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

describe("authentication is decided by the matched route", () => {
  test("the three requests that used to reach the admin API without a token are refused", async () => {
    assertStopped(await send("GET", "/%61pi/users"), "GET /%61pi/users");
    assertStopped(await send("GET", "http://x/api/servers"), "absolute-form GET http://x/api/servers");
    const post = await rawRequest(port, {
      method: "POST",
      target: "/%61pi/users",
      headers: { "content-type": "application/json" },
      body: '{"name":"x"}',
    });
    assertStopped(post, "POST /%61pi/users");
    const users = await t.app.inject({ url: "/api/users/search?q=x", headers: t.auth });
    assert.deepEqual(users.json(), [], "the POST created no user");
  });

  test("every spelling of every protected operation's path is stopped without a token", async () => {
    const protectedOps = operations.filter((op) => !op.isPublic);
    assert.ok(protectedOps.length >= 40, `only ${protectedOps.length} protected operations in the document`);
    const jobs: { method: string; target: string }[] = [];
    for (const op of protectedOps) {
      const path = fillPath(op.path, new Proxy({}, { get: () => ID }));
      for (const target of spellings(path, port)) {
        jobs.push({ method: op.method, target });
        if (op.method === "GET") jobs.push({ method: "HEAD", target });
      }
    }
    await pool(jobs, 16, async ({ method, target }) => {
      assertStopped(await send(method, target), `${method} ${target}`, method === "HEAD");
    });
    assert.ok(jobs.length > 2000, `${jobs.length} requests`);
  });

  test("the canonical path with a valid token is answered, so the walk is not stopping everything", async () => {
    const answer = await rawRequest(port, {
      target: "/api/users",
      headers: { authorization: t.auth.authorization },
    });
    assert.equal(answer.status, 200);
    const encoded = await rawRequest(port, {
      target: "http://x/%61pi/users",
      headers: { authorization: t.auth.authorization },
    });
    assert.equal(encoded.status, 200, "the same route, spelled otherwise, is the same route");
  });

  test("public routes stay public in every spelling: /health, /sub, the token endpoint, the docs", async () => {
    for (const target of ["/health", "/%68ealth", "http://x/health"]) {
      assert.equal((await send("GET", target)).status, 200, target);
    }
    assert.equal((await send("GET", `/sub/${ID}`)).status, 404);
    assert.equal((await send("GET", "/api/openapi.json")).status, 200);
    assert.equal((await send("GET", "/api/docs/")).status, 200);
  });
});
