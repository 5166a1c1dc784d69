// test ring: outer (starts Node processes of its own; scripts/run-tests.ts keeps it out of test:fast)
// `portcullis serve` as a real process, on whichever dialect DATABASE_URL selects: SIGTERM stops
// accepting, lets a request in flight finish, releases the leases and exits 0; a request that never
// finishes is cut at the shutdown deadline and the leases are still released; a port in use is one
// line; an admin password that cannot apply any more says so.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { createServer } from "node:net";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { waitFor } from "../../test/support/poll.ts";
import {
  type PortcullisProcess,
  type Store,
  sharedStore,
  startPortcullis,
} from "../../test/support/portcullis-process.ts";
import { freePort } from "../../test/support/ports.ts";
import { CleanupStack } from "../../test/support/v2ray.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const stack = new CleanupStack();
after(() => stack.run());

// LOG_LEVEL info: the log's "incoming request" line says the server is handling a request.
const FAST = { PORTCULLIS_RECONCILE_INTERVAL_MS: "200", PORTCULLIS_LEASE_TTL_MS: "5000", LOG_LEVEL: "info" };

/** Fastify logged the POST /api/users as received: routed, authenticated next, its body awaited. */
const isHandlingCreate = (p: PortcullisProcess) =>
  p
    .stdout()
    .split("\n")
    .some((line) => line.includes('"method":"POST","url":"/api/users"') && line.includes("incoming request"));

/** A POST /api/users whose body is sent in two halves: in flight until `finish()`. */
function slowCreate(p: PortcullisProcess, token: string, name: string) {
  const body = Buffer.from(JSON.stringify({ name }));
  const half = Math.floor(body.length / 2);
  const req = httpRequest({
    host: "127.0.0.1",
    port: p.port,
    method: "POST",
    path: "/api/users",
    agent: false,
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "content-length": String(body.length),
      connection: "keep-alive",
    },
  });
  const response = new Promise<{ status: number; body: string; headers: IncomingMessage["headers"] }>(
    (resolve, reject) => {
      req.on("error", reject);
      req.on("response", (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
      });
    },
  );
  req.flushHeaders();
  req.write(body.subarray(0, half));
  return { response, finish: () => req.end(body.subarray(half)), abandon: () => req.destroy() };
}

async function sessionToken(p: PortcullisProcess): Promise<string> {
  const res = await fetch(`${p.baseUrl}/api/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password: "correct horse battery" }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

const refusesConnections = (p: PortcullisProcess) =>
  fetch(`${p.baseUrl}/health`).then(
    () => false,
    (error: Error) => (error.cause as NodeJS.ErrnoException | undefined)?.code === "ECONNREFUSED",
  );

/** A server whose core nobody answers: on PostgreSQL the instance takes its lease. */
async function leasedServer(p: PortcullisProcess, store: Store): Promise<() => Promise<string[]>> {
  const res = await p.api("POST", "/api/servers", {
    name: `lease-${p.port}`,
    hostname: "127.0.0.1",
    grpc_port: await freePort(),
  });
  assert.equal(res.status, 201);
  const server = (await res.json()) as { id: string };
  const database = await store.open();
  stack.add(() => database.close());
  const holders = async () =>
    (
      await database.db
        .selectFrom("server_leases")
        .select("holder")
        .where("server_id", "=", server.id)
        .execute()
    ).map((row) => row.holder);
  if (database.dialect === "postgres") {
    await waitFor(async () => (await holders()).length === 1, { what: "the instance to lease the server" });
  }
  return holders;
}

describe("graceful shutdown on SIGTERM", () => {
  test("stops accepting, finishes the request in flight, releases its leases and exits 0", async () => {
    const store = await sharedStore(stack.add);
    const p = await startPortcullis(stack.add, store, FAST);
    const holders = await leasedServer(p, store);
    const inFlight = slowCreate(p, await sessionToken(p), "created during shutdown");
    await waitFor(() => isHandlingCreate(p), { what: "the server to receive the request" });
    p.signal("SIGTERM");
    await waitFor(() => refusesConnections(p), { what: "new connections refused after SIGTERM" });
    assert.ok(p.isAlive(), "still running while a request is in flight");
    inFlight.finish();
    const answer = await inFlight.response;
    assert.equal(answer.status, 201, answer.body);
    assert.equal((JSON.parse(answer.body) as { name: string }).name, "created during shutdown");
    assert.deepEqual(await p.exited, { code: 0, signal: null });
    assert.deepEqual(await holders(), [], "no lease left behind");
    const database = await store.open();
    stack.add(() => database.close());
    const stored = await database.db
      .selectFrom("users")
      .select("name")
      .where("name", "=", "created during shutdown")
      .execute();
    assert.equal(stored.length, 1);
  });

  test("/sub fetches noted in memory are in the database after a SIGTERM", async () => {
    const store = await sharedStore(stack.add);
    const p = await startPortcullis(stack.add, store, FAST);
    const created = await p.api("POST", "/api/users", { name: "fetched before shutdown" });
    assert.equal(created.status, 201);
    const user = (await created.json()) as { id: string; subscription_url: string };
    for (let i = 0; i < 2; i++) {
      // A miss, then (most likely) a hit of the fast path: both are noted, neither writes.
      const res = await fetch(`${p.baseUrl}/sub/${user.subscription_url.split("/").at(-1)}`, {
        headers: { "user-agent": "Streisand/1.6.48" },
      });
      assert.equal(res.status, 200);
    }
    p.signal("SIGTERM");
    assert.deepEqual(await p.exited, { code: 0, signal: null });
    const database = await store.open();
    stack.add(() => database.close());
    const row = await database.db
      .selectFrom("users")
      .select(["sub_updated_at", "sub_last_user_agent"])
      .where("id", "=", user.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.sub_last_user_agent, "Streisand/1.6.48");
    assert.notEqual(row.sub_updated_at, null);
  });

  test("a request that never finishes is cut at the deadline; leases are released anyway; exit 1", async () => {
    const store = await sharedStore(stack.add);
    const p = await startPortcullis(stack.add, store, { ...FAST, PORTCULLIS_SHUTDOWN_TIMEOUT_MS: "1500" });
    const holders = await leasedServer(p, store);
    const stuck = slowCreate(p, await sessionToken(p), "never finished");
    stuck.response.catch(() => undefined);
    await waitFor(() => isHandlingCreate(p), { what: "the server to receive the request" });
    const startedMs = performance.now();
    p.signal("SIGTERM");
    const exit = await p.exited;
    const tookMs = performance.now() - startedMs;
    assert.deepEqual(exit, { code: 1, signal: null });
    assert.ok(tookMs >= 1400 && tookMs < 10_000, `exited after ${Math.round(tookMs)} ms`);
    assert.match(p.stdout(), /shutdown deadline of 1500 ms passed/);
    assert.deepEqual(await holders(), []);
  });
});

describe("the first minutes", () => {
  test("a port in use is one line, not a stack trace, before any admin or password", async () => {
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve));
    stack.add(() => new Promise((resolve) => blocker.close(resolve)));
    const store = await sharedStore(stack.add);
    const result = spawnSync(process.execPath, ["--import", "tsx", "src/main.ts", "serve"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", ...store.env, HOST: "127.0.0.1", PORT: String(port) },
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(result.status, 1, result.stderr);
    const lines = result.stderr.trim().split("\n");
    assert.match(lines[0] ?? "", /^portcullis: database: (SQLite|PostgreSQL) /);
    assert.deepEqual(lines.slice(1), [
      `portcullis: cannot listen: 127.0.0.1:${port} is already in use by another process (choose another PORT, or stop that one)`,
    ]);
    assert.doesNotMatch(result.stderr, /First start|password/);
    const database = await store.open();
    stack.add(() => database.close());
    assert.deepEqual(await database.db.selectFrom("admins").select("id").execute(), []);
  });

  test("PORTCULLIS_ADMIN_PASSWORD on a database that has an admin is said to be ignored", async () => {
    const store = await sharedStore(stack.add);
    const first = await startPortcullis(stack.add, store);
    assert.doesNotMatch(first.stderr(), /ignored/, "the first start uses it");
    await first.kill("SIGTERM");
    const second = await startPortcullis(stack.add, store, { PORTCULLIS_ADMIN_PASSWORD: "another password" });
    await waitFor(() => /PORTCULLIS_ADMIN_PASSWORD is ignored/.test(second.stderr()), {
      what: `the notice (stderr: ${second.stderr()})`,
    });
    assert.doesNotMatch(second.stderr(), /another password/, "the password itself is not printed");
  });
});
