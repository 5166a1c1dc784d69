// The client on the Xray namespace, against a recording server that decodes requests like the Xray
// release it pretends to be and answers like it; flavor detection; TLS, mTLS and tokens.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { startRecordingXray } from "../../test/support/recording-grpc.ts";
import { requires } from "../../test/support/requires.ts";
import { CleanupStack, makeCert, startV2rayServer, tempDir } from "../../test/support/v2ray.ts";
import type * as cmd from "../gen/xray/app/proxyman_command_pb.ts";
import { ReceiverConfigSchema } from "../gen/xray/app/proxyman_r6_pb.ts";
import { GrpcCoreClient, type GrpcCoreClientOptions } from "./grpc-core-client.ts";
import { buildInbound, buildUser } from "./inbound-builder/build.ts";
import { XRAY_GOLDEN_INPUTS } from "./xray-golden.fixture.ts";

const needs = requires("v2ray", "openssl");

const stack = new CleanupStack();
needs.after(() => stack.run());

function clientFor(options: GrpcCoreClientOptions): GrpcCoreClient {
  const client = new GrpcCoreClient({ reconnectBackoffMs: { initial: 20, max: 200 }, ...options });
  stack.add(() => client.close());
  return client;
}

async function rejects(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: { code?: string; message?: string }) => {
    assert.equal(error.code, code, error.message);
    return true;
  });
}

describe("flavor detection", needs, () => {
  test("an Xray core is asked on the xray namespace first (it also answers on v2ray.core names)", async () => {
    const xray = await startRecordingXray(stack.add);
    const client = clientFor({ address: xray.address });
    assert.equal(await client.detectFlavor(), "xray");
    assert.equal(xray.calls[0]?.path, "/xray.app.stats.command.StatsService/GetSysStats");
    assert.ok(!xray.calls.some((call) => call.path.startsWith("/v2ray.")));
    // Real Xray registers its services under v2ray.core.* too: asking there first would mislead.
    const v2rayNamed = clientFor({ address: xray.address, layout: "v2ray-4", capabilities: [] });
    assert.equal((await v2rayNamed.getSysStats()).goroutines, 12);
  });

  test("the real V2Ray 4.34 answers UNIMPLEMENTED on the xray namespace and stays alive", async () => {
    const server = await startV2rayServer(stack.add);
    const client = clientFor({ address: server.apiAddress });
    assert.equal(await client.detectFlavor(), "v2ray");
    assert.ok(server.isAlive());
    const xrayBuilt = buildInbound(XRAY_GOLDEN_INPUTS.vmessWs, "xray");
    assert.ok(xrayBuilt.ok);
    await rejects(client.addInbound(xrayBuilt.value), "core_request_refused");
  });
});

describe("every call on the Xray namespace", needs, () => {
  test("inbounds and users are sent as Xray messages and listed back", async () => {
    const xray = await startRecordingXray(stack.add);
    const client = clientFor({ address: xray.address });
    const inbound = buildInbound(XRAY_GOLDEN_INPUTS.reality, "xray");
    assert.ok(inbound.ok);
    await client.addInbound(inbound.value);
    const sent = xray.calls.at(-1)?.request as cmd.AddInboundRequest;
    assert.equal(sent.inbound?.receiverSettings?.type, "xray.app.proxyman.ReceiverConfig");
    const receiver = fromBinary(
      ReceiverConfigSchema,
      sent.inbound?.receiverSettings?.value ?? new Uint8Array(),
    );
    assert.equal(receiver.portList?.range[0]?.From, 443);
    assert.equal(receiver.streamSettings?.securityType, "xray.transport.internet.reality.Config");

    const bob = buildUser("vless", "xray", {
      email: "bob@t",
      credential: "22222222-2222-4222-8222-222222222222",
      flow: "xtls-rprx-vision",
    });
    assert.ok(bob.ok);
    await client.addUser(inbound.value.ref, bob.value);
    await rejects(client.addUser(inbound.value.ref, bob.value), "core_conflict");
    assert.deepEqual(await client.listInbounds(), [
      { tag: "r", protocol: "vless", proxyType: "xray.proxy.vless.inbound.Config", portRanges: [[443, 443]] },
    ]);
    const users = await client.listInboundUsers("r");
    assert.deepEqual(
      users.map((user) => [user.email, user.accountType, user.credential]),
      [
        ["a@t", "xray.proxy.vless.Account", "11111111-1111-4111-8111-111111111111"],
        ["bob@t", "xray.proxy.vless.Account", "22222222-2222-4222-8222-222222222222"],
      ],
    );
    assert.equal(await client.countInboundUsers("r"), 2);
    await client.removeUser("r", "bob@t");
    await rejects(client.removeUser("r", "bob@t"), "core_not_found");
    await rejects(client.listInboundUsers("nope"), "core_not_found");
    await client.removeInbound("r");
    await rejects(client.removeInbound("r"), "core_not_found");
  });

  test("a second AddInbound with a taken tag is a conflict on Xray too", async () => {
    const xray = await startRecordingXray(stack.add);
    const first = clientFor({ address: xray.address });
    const second = clientFor({ address: xray.address });
    const inbound = buildInbound(XRAY_GOLDEN_INPUTS.trojanGrpcTls, "xray");
    assert.ok(inbound.ok);
    await first.addInbound(inbound.value);
    await rejects(second.addInbound(inbound.value), "core_conflict");
    assert.equal(xray.inbounds.has("g"), true, "the conflict must not remove the existing inbound");
  });

  test("SS-2022 users carry the shadowsocks_2022 account; the wrong account type is refused", async () => {
    const xray = await startRecordingXray(stack.add);
    const client = clientFor({ address: xray.address });
    const inbound = buildInbound(XRAY_GOLDEN_INPUTS.ss2022, "xray");
    assert.ok(inbound.ok);
    await client.addInbound(inbound.value);
    const key = "AgICAgICAgICAgICAgICAg==";
    const good = buildUser("shadowsocks", "xray", {
      email: "k@t",
      credential: key,
      shadowsocksMethod: "2022-blake3-aes-128-gcm",
    });
    const classic = buildUser("shadowsocks", "xray", {
      email: "c@t",
      credential: "pw",
      shadowsocksMethod: "aes-128-gcm",
    });
    assert.ok(good.ok && classic.ok);
    await client.addUser(inbound.value.ref, good.value);
    await rejects(client.addUser(inbound.value.ref, classic.value), "core_request_refused");
    assert.equal(await client.countInboundUsers("s"), 2);
  });

  test("QueryStats and GetSysStats decode into neutral values", async () => {
    const xray = await startRecordingXray(stack.add);
    xray.counters.set("user>>>a@t>>>traffic>>>downlink", 9_007_199_254_740_993n);
    xray.counters.set("user>>>b@t>>>traffic>>>downlink", 5n);
    const client = clientFor({ address: xray.address, layout: "xray-25.10", capabilities: [] });
    assert.deepEqual(await client.queryStats("a@t", true), [
      { name: "user>>>a@t>>>traffic>>>downlink", value: 9_007_199_254_740_993n },
    ]);
    assert.equal(xray.counters.get("user>>>a@t>>>traffic>>>downlink"), 0n);
    assert.equal((await client.getSysStats()).goroutines, 12);
  });
});

describe("credentials on the wire", needs, () => {
  test("a bearer token goes as authorization metadata, over TLS with a CA and a server name", async () => {
    const cert = makeCert(tempDir(stack.add), "server");
    const xray = await startRecordingXray(stack.add, { tls: { certPem: cert.certPem, keyPem: cert.keyPem } });
    const address = xray.address.replace("localhost", "127.0.0.1");
    const client = clientFor({
      address,
      credentials: { ca: cert.certPem, server_name: "localhost", token: "t0ken-abc" },
    });
    await client.getSysStats();
    assert.equal(xray.calls[0]?.authorization, "Bearer t0ken-abc");
  });

  test("a token alone travels in plaintext only to a loopback address", async () => {
    const xray = await startRecordingXray(stack.add);
    const client = clientFor({ address: xray.address, credentials: { token: "local-token" } });
    await client.getSysStats();
    assert.equal(xray.calls[0]?.authorization, "Bearer local-token");
  });

  test("mTLS: the client certificate is presented; without it the proxy refuses", async () => {
    const dir = tempDir(stack.add);
    const serverCert = makeCert(dir, "server");
    const clientCert = makeCert(dir, "client");
    const xray = await startRecordingXray(stack.add, {
      tls: { certPem: serverCert.certPem, keyPem: serverCert.keyPem, clientCaPem: clientCert.certPem },
    });
    const base = { ca: serverCert.certPem, server_name: "localhost" };
    const withCert = clientFor({
      address: xray.address,
      credentials: { ...base, cert: clientCert.certPem, key: clientCert.keyPem },
    });
    await withCert.getSysStats();
    const withoutCert = clientFor({ address: xray.address, credentials: base, timeoutMs: 2000 });
    await assert.rejects(withoutCert.getSysStats(), (error: { code?: string; message: string }) => {
      assert.ok(["core_unavailable", "core_timeout"].includes(error.code ?? ""), error.message);
      assert.doesNotMatch(error.message, /PRIVATE KEY/);
      return true;
    });
  });
});
