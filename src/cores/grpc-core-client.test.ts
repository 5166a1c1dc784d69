// Every CoreClient call against the real Debian V2Ray 4.34 core, including the error texts it
// answers with and the quirks the client hides (failed AddInbound, restart, protected API tag).

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { freePort } from "../../test/support/ports.ts";
import { requires } from "../../test/support/requires.ts";
import { API_TAG, CleanupStack, startV2rayServer, type V2rayServer } from "../../test/support/v2ray.ts";
import type { CoreProtocol } from "./core-types.ts";
import { GrpcCoreClient } from "./grpc-core-client.ts";
import { buildInbound, buildUser } from "./inbound-builder/build.ts";
import type { BuiltInbound, BuiltUser } from "./inbound-builder/built.ts";

const needs = requires("v2ray");

const UUID_A = "11111111-1111-4111-8111-111111111111";
const UUID_B = "22222222-2222-4222-8222-222222222222";

function inbound(
  tag: string,
  port: number,
  clients: object[] = [{ id: UUID_A, email: `${tag}-a@t` }],
): BuiltInbound {
  const result = buildInbound(
    { tag, port, listen: "127.0.0.1", protocol: "vless", settings: { clients } },
    "v2ray",
  );
  assert.ok(result.ok, JSON.stringify(result));
  return result.value;
}

function user(protocol: CoreProtocol, email: string, credential: string): BuiltUser {
  const result = buildUser(protocol, "v2ray", { email, credential });
  assert.ok(result.ok, JSON.stringify(result));
  return result.value;
}

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: { code?: string; message?: string }) => {
    assert.equal(error.code, code, error.message);
    return true;
  });
}

describe("GrpcCoreClient against V2Ray 4.34", needs, () => {
  const stack = new CleanupStack();
  let server: V2rayServer;
  let client: GrpcCoreClient;
  after(() => stack.run());

  before(async () => {
    server = await startV2rayServer(stack.add);
    client = new GrpcCoreClient({
      address: server.apiAddress,
      protectedTags: [API_TAG],
      reconnectBackoffMs: { initial: 20, max: 200 },
    });
    stack.add(() => client.close());
  });

  test("detects the v2ray flavor (the xray namespace answers UNIMPLEMENTED) and reads sys stats", async () => {
    assert.equal(client.flavor, null);
    assert.equal(await client.detectFlavor(), "v2ray");
    assert.equal(client.flavor, "v2ray");
    assert.equal(client.version, null);
    const stats = await client.getSysStats();
    assert.ok(stats.goroutines > 0 && stats.sysBytes > 0, JSON.stringify(stats));
    assert.ok(server.isAlive());
  });

  test("adds an inbound, adds and removes users, and maps the core's texts to error codes", async () => {
    const port = await freePort();
    await client.addInbound(inbound("calls-vless", port));
    await rejects(client.addInbound(inbound("calls-vless", port)), "core_conflict");
    const ref = { tag: "calls-vless", protocol: "vless" } as const;
    await client.addUser(ref, user("vless", "calls-b@t", UUID_B));
    await rejects(client.addUser(ref, user("vless", "calls-b@t", UUID_B)), "core_conflict");
    await rejects(
      client.addUser({ tag: "no-such-tag", protocol: "vless" }, user("vless", "x@t", UUID_B)),
      "core_not_found",
    );
    await client.removeUser("calls-vless", "calls-b@t");
    await rejects(client.removeUser("calls-vless", "calls-b@t"), "core_not_found");
    await client.removeInbound("calls-vless");
    await rejects(client.removeInbound("calls-vless"), "core_not_found");
    assert.ok(server.isAlive());
  });

  test("queries counters by substring and resets them", async () => {
    const all = await client.queryStats("", false);
    const apiUplink = all.find((stat) => stat.name === `inbound>>>${API_TAG}>>>traffic>>>uplink`);
    assert.ok(
      apiUplink !== undefined && apiUplink.value > 0n,
      JSON.stringify(all, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
    );
    const reset = await client.queryStats(`outbound>>>direct>>>`, true);
    assert.equal(reset.length, 2);
    assert.ok(server.isAlive());
  });

  test("the listing calls are Xray-only: core_unsupported on V2Ray, nothing sent", async () => {
    await rejects(client.listInbounds(), "core_unsupported");
    await rejects(client.listInboundUsers("x"), "core_unsupported");
    await rejects(client.countInboundUsers("x"), "core_unsupported");
  });

  test("a failed AddInbound (port held elsewhere) is reported and its registered tag removed", async (t) => {
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve));
    t.after(() => new Promise((resolve) => blocker.close(resolve)));
    await assert.rejects(client.addInbound(inbound("calls-busy", port)), /address already in use/);
    // V2Ray keeps the tag after a failed listen; the client removed it, so the core now says "not found".
    await rejects(client.removeInbound("calls-busy"), "core_not_found");
    assert.ok(server.isAlive());
  });

  test("replaceInbound re-applies an inbound; the API inbound's tag is never touched", async () => {
    const port = await freePort();
    await client.replaceInbound(inbound("calls-replace", port));
    await client.replaceInbound(inbound("calls-replace", port, [{ id: UUID_B, email: "calls-replace-b@t" }]));
    await rejects(client.removeInbound(API_TAG), "core_request_refused");
    await client.removeInbound("calls-replace");
    assert.ok(server.isAlive());
  });

  test("after a core restart the channel reconnects and the core is empty (uptime restarts)", async () => {
    const port = await freePort();
    await client.addInbound(inbound("calls-restart", port));
    await server.restart();
    const stats = await client.getSysStats();
    assert.ok(stats.uptimeSeconds <= 2, `uptime ${stats.uptimeSeconds}`);
    await rejects(client.removeInbound("calls-restart"), "core_not_found");
    assert.ok(server.isAlive());
  });
});
