// The servers API against a real V2Ray 4.34 core: connectivity test, status, stats with a user's
// real traffic, and every failure path answering within its deadline.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type Socket } from "node:net";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import { requires } from "../../../test/support/requires.ts";
import {
  CleanupStack,
  fetchViaSocks,
  startHttpServer,
  startV2rayClient,
  startV2rayServer,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";
import { buildInbound, buildUser } from "../../cores/inbound-builder/build.ts";

const needs = requires("v2ray");

const stack = new CleanupStack();
let t: TestApp;
let core: V2rayServer;
const TIMEOUT_MS = 1500;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: String(TIMEOUT_MS) });
  core = await startV2rayServer(stack.add);
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

function api(method: "GET" | "POST" | "PUT", url: string, payload?: unknown) {
  return t.app.inject({
    method,
    url,
    headers: t.auth,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

async function register(name: string, port: number, api_credentials?: string): Promise<string> {
  const body = {
    name,
    hostname: "127.0.0.1",
    grpc_port: port,
    ...(api_credentials ? { api_credentials } : {}),
  };
  const res = await api("POST", "/api/servers", body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

describe("a reachable core", needs, () => {
  test("/test connects, detects v2ray, and the server goes online with its flavor remembered", async () => {
    const id = await register("real-core", core.apiPort);
    const res = await api("POST", `/api/servers/${id}/test`);
    assert.equal(res.statusCode, 200);
    const result = res.json();
    assert.equal(result.connected, true);
    assert.equal(result.core, "v2ray");
    assert.equal(result.endpoint, `127.0.0.1:${core.apiPort}`);
    assert.equal(result.error, null);
    assert.ok(result.latency_ms >= 0 && result.latency_ms < TIMEOUT_MS);
    assert.deepEqual([result.wire_layout, result.core_capabilities], ["v2ray-4", []]);
    const server = (await api("GET", `/api/servers/${id}`)).json();
    assert.equal(server.status, "online");
    assert.equal(server.core, "v2ray");
    assert.deepEqual([server.wire_layout, server.wire_layout_pinned], ["v2ray-4", false]);
    assert.ok(core.isAlive());
  });

  test("an operator can pin the wire layout, unpin it (detected again), and gets 400 for a layout that does not exist", async () => {
    const id = await register("pinned-core", core.apiPort);
    const pin = await api("PUT", `/api/servers/${id}`, { wire_layout: "v2ray-4" });
    assert.equal(pin.statusCode, 200, pin.body);
    assert.deepEqual(
      [pin.json().wire_layout, pin.json().wire_layout_pinned, pin.json().core],
      ["v2ray-4", true, "v2ray"],
    );
    const tested = (await api("POST", `/api/servers/${id}/test`)).json();
    assert.deepEqual([tested.connected, tested.wire_layout], [true, "v2ray-4"]);
    const unpin = (await api("PUT", `/api/servers/${id}`, { wire_layout: null })).json();
    assert.deepEqual([unpin.wire_layout, unpin.wire_layout_pinned], [null, false]);
    assert.equal((await api("POST", `/api/servers/${id}/test`)).json().wire_layout, "v2ray-4");
    const bad = await api("PUT", `/api/servers/${id}`, { wire_layout: "xray-9.9" });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.headers["content-type"], "application/problem+json; charset=utf-8");
    assert.equal(bad.json().code, "validation_failed");
    const created = await api("POST", "/api/servers", {
      name: "born-pinned",
      hostname: "127.0.0.1",
      grpc_port: core.apiPort,
      wire_layout: "xray-24.9",
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.deepEqual([created.json().wire_layout, created.json().wire_layout_pinned], ["xray-24.9", true]);
  });

  test("stats show uptime, memory and the bytes of a user whose traffic went through the core", async () => {
    const id = await register("stats-core", core.apiPort);
    const client = await t.deps.services.servers.clientOf(id);
    const inboundPort = await freePort();
    const built = buildInbound(
      {
        tag: "stats-vless",
        port: inboundPort,
        listen: "127.0.0.1",
        protocol: "vless",
        settings: { clients: [], decryption: "none" },
      },
      "v2ray",
    );
    assert.ok(built.ok);
    await client.addInbound(built.value);
    const id0 = randomUUID();
    const user = buildUser("vless", "v2ray", { email: "stats-user@t", credential: id0 });
    assert.ok(user.ok);
    await client.addUser(built.value.ref, user.value);
    const socksPort = await freePort();
    await startV2rayClient(
      stack.add,
      {
        inbounds: [{ listen: "127.0.0.1", port: socksPort, protocol: "socks", settings: { auth: "noauth" } }],
        outbounds: [
          {
            protocol: "vless",
            settings: {
              vnext: [{ address: "127.0.0.1", port: inboundPort, users: [{ id: id0, encryption: "none" }] }],
            },
          },
        ],
      },
      [socksPort],
    );
    const body = Buffer.alloc(50_000, 7);
    const httpPort = await startHttpServer(stack.add, body);
    const fetched = await fetchViaSocks(socksPort, { port: httpPort, path: "/" });
    assert.equal(fetched.body.length, body.length);

    const stats = (await api("GET", `/api/servers/${id}/stats`)).json();
    assert.equal(stats.core, "v2ray");
    assert.ok(stats.uptime_seconds >= 0);
    assert.ok(stats.memory.alloc_bytes > 0);
    const mine = stats.users.find((u: { email: string }) => u.email === "stats-user@t");
    assert.ok(mine, JSON.stringify(stats.users));
    assert.ok(mine.downlink_bytes >= body.length, `downlink ${mine.downlink_bytes}`);
    const inbound = stats.inbounds.find((i: { tag: string }) => i.tag === "stats-vless");
    assert.ok(inbound.downlink_bytes >= body.length);
    assert.ok(!stats.inbounds.some((i: { tag: string }) => i.tag === "api-in"), "the API inbound is hidden");
    assert.ok(stats.traffic.downlink_bytes >= body.length);
    await client.removeInbound("stats-vless");
    assert.ok(core.isAlive());
  });
});

describe("an unreachable core", needs, () => {
  test("a port nobody listens on: connected false, status offline, within the deadline", async () => {
    const id = await register("nobody-home", await freePort());
    const started = Date.now();
    const result = (await api("POST", `/api/servers/${id}/test`)).json();
    assert.ok(Date.now() - started < TIMEOUT_MS + 1000, `${Date.now() - started} ms`);
    assert.equal(result.connected, false);
    assert.match(result.error, /unavailable|unreachable|connect/i);
    assert.equal((await api("GET", `/api/servers/${id}`)).json().status, "offline");
    const stats = await api("GET", `/api/servers/${id}/stats`);
    assert.ok([502, 504].includes(stats.statusCode), stats.body);
    assert.equal(stats.headers["content-type"], "application/problem+json; charset=utf-8");
  });

  test("a listener that accepts and never answers: /test and /stats give up at the deadline", async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    stack.add(() => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => silent.close(resolve));
    });
    const port = (silent.address() as { port: number }).port;
    const id = await register("silent-core", port);
    const started = Date.now();
    const [testRes, statsRes] = await Promise.all([
      api("POST", `/api/servers/${id}/test`),
      api("GET", `/api/servers/${id}/stats`),
    ]);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= TIMEOUT_MS * 0.9 && elapsed < TIMEOUT_MS * 2 + 2000, `${elapsed} ms`);
    assert.equal(testRes.json().connected, false);
    assert.equal(statsRes.statusCode, 504, statsRes.body);
    assert.equal(statsRes.json().code, "core_timeout");
    assert.equal((await api("GET", `/api/servers/${id}`)).json().status, "offline");
  });

  test("stopping the core turns a working server offline", async () => {
    const own = await startV2rayServer(stack.add);
    const id = await register("stopped-core", own.apiPort);
    assert.equal((await api("POST", `/api/servers/${id}/test`)).json().connected, true);
    await own.kill("SIGTERM");
    const started = Date.now();
    const result = (await api("POST", `/api/servers/${id}/test`)).json();
    assert.ok(Date.now() - started < TIMEOUT_MS + 1000);
    assert.equal(result.connected, false);
    assert.equal((await api("GET", `/api/servers/${id}`)).json().status, "offline");
  });
});

describe("a core API behind TLS", needs, () => {
  test("the right CA connects; another CA does not; the token never shows up anywhere", async () => {
    const tlsCore = await startV2rayServer(stack.add, { apiTls: true });
    assert.ok(tlsCore.apiCredentials?.ca);
    const good = JSON.stringify({ ...tlsCore.apiCredentials, token: "leakcheck-bearer-value" });
    const id = await register("tls-core", tlsCore.apiPort, good);
    const ok = await api("POST", `/api/servers/${id}/test`);
    assert.equal(ok.json().connected, true, ok.body);
    assert.ok(!ok.body.includes("leakcheck"));

    const other = await startV2rayServer(stack.add, { apiTls: true });
    const wrong = JSON.stringify({ ca: other.apiCredentials?.ca, server_name: "localhost" });
    const wrongId = await register("tls-core-wrong-ca", tlsCore.apiPort, wrong);
    const refused = (await api("POST", `/api/servers/${wrongId}/test`)).json();
    assert.equal(refused.connected, false);
    assert.notEqual((await api("GET", `/api/servers/${wrongId}`)).json().status, "online");
    assert.ok(tlsCore.isAlive() && other.isAlive());
  });
});
