// The layout probe against stand-ins of every Xray release whose .proto files were read (each decodes
// like that release's Go code) and against the real V2Ray 4.34: the right layout and capabilities,
// nothing created, live inbounds untouched, and bytes of the wrong layout visibly wrong on the core.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { waitFor } from "../../test/support/poll.ts";
import {
  type RecordingXray,
  startRecordingXray,
  XRAY_RELEASES,
  type XrayRelease,
} from "../../test/support/recording-grpc.ts";
import { CleanupStack, startV2rayServer } from "../../test/support/v2ray.ts";
import type * as cmd from "../gen/xray/app/proxyman_command_pb.ts";
import { GrpcCoreClient, type GrpcCoreClientOptions } from "./grpc-core-client.ts";
import { buildInbound, buildUser } from "./inbound-builder/build.ts";
import type { BuiltInbound } from "./inbound-builder/built.ts";
import { PROBE_TAG } from "./layout-probe.ts";
import type { WireLayout } from "./wire-layout.ts";
import { XRAY_GOLDEN_INPUTS } from "./xray-golden.fixture.ts";

const stack = new CleanupStack();
after(() => stack.run());

function clientFor(options: GrpcCoreClientOptions): GrpcCoreClient {
  const client = new GrpcCoreClient({
    reconnectBackoffMs: { initial: 20, max: 200 },
    timeoutMs: 3000,
    ...options,
  });
  stack.add(() => client.close());
  return client;
}

function built(name: string, layout: WireLayout): BuiltInbound {
  const result = buildInbound(XRAY_GOLDEN_INPUTS[name], layout);
  assert.ok(result.ok, JSON.stringify(result));
  return result.value;
}

/** Every call the probe made, as method names; and the tags of any AddInbound among them. */
function probeCalls(xray: RecordingXray) {
  const methods = xray.calls.map((call) => call.path.split("/").at(-1));
  const tags = xray.calls
    .filter((call) => call.path.endsWith("/AddInbound"))
    .map((call) => (call.request as cmd.AddInboundRequest).inbound?.tag);
  return { methods, tags };
}

const EXPECTED: Record<XrayRelease, { layout: WireLayout; capabilities: string[] }> = {
  "1.8.13": { layout: "xray-1.8", capabilities: [] },
  "24.9.30": { layout: "xray-24.9", capabilities: [] },
  "25.1.1": { layout: "xray-25.1", capabilities: [] },
  "25.9.5": { layout: "xray-25.1", capabilities: ["listing"] },
  "25.10.15": { layout: "xray-25.10", capabilities: ["listing"] },
  "26.5.10": { layout: "xray-25.10", capabilities: ["listing", "online_users"] },
};

describe("the probe tells every known Xray release's layout", () => {
  for (const release of Object.keys(XRAY_RELEASES) as XrayRelease[]) {
    test(`Xray ${release} is ${EXPECTED[release].layout}, and the probe creates nothing`, async () => {
      const xray = await startRecordingXray(stack.add, { release });
      const client = clientFor({ address: xray.address });
      assert.deepEqual(await client.detectLayout(), EXPECTED[release]);
      assert.equal(client.flavor, "xray");
      assert.equal(xray.inbounds.size, 0);
      assert.equal(xray.panic, null);
      const { methods, tags } = probeCalls(xray);
      assert.ok(tags.every((tag) => tag === PROBE_TAG));
      assert.ok(!methods.includes("RemoveInbound"), "nothing was created, so nothing was removed");
      assert.ok(methods.length <= 10, `${methods.length} calls: ${methods.join(", ")}`);
    });
  }
});

describe("the probe never disturbs what the core holds", () => {
  test("live inbounds and users are untouched by a re-detection, on every layout", async () => {
    for (const release of ["1.8.13", "25.9.5", "26.5.10"] as const) {
      const xray = await startRecordingXray(stack.add, { release });
      const client = clientFor({ address: xray.address });
      const { layout } = await client.detectLayout();
      const inbound = built("ss2022", layout);
      await client.addInbound(inbound);
      const bob = buildUser("shadowsocks", layout, {
        email: "bob@t",
        credential: "AgICAgICAgICAgICAgICAg==",
        shadowsocksMethod: "2022-blake3-aes-128-gcm",
      });
      assert.ok(bob.ok);
      await client.addUser(inbound.ref, bob.value);
      const before = [...(xray.inbounds.get("s")?.users.keys() ?? [])];
      assert.deepEqual((await client.redetectLayout()).layout, layout);
      assert.deepEqual([...xray.inbounds.keys()], ["s"], release);
      assert.deepEqual([...(xray.inbounds.get("s")?.users.keys() ?? [])], before);
      assert.deepEqual(before, ["d@t", "bob@t"]);
      assert.equal(xray.panic, null);
    }
  });

  test("a pinned layout is never probed: only the read-only capability calls are made", async () => {
    const xray = await startRecordingXray(stack.add, { release: "25.9.5" });
    const client = clientFor({ address: xray.address, layout: "xray-25.1", isLayoutPinned: true });
    assert.deepEqual(await client.redetectLayout(), { layout: "xray-25.1", capabilities: ["listing"] });
    // GetAllOnlineUsers was asked too: 25.9 answers UNIMPLEMENTED, which a stand-in cannot record.
    assert.deepEqual(probeCalls(xray).methods, ["ListInbounds"]);
  });

  test("the real V2Ray 4.34 is v2ray-4 and stays alive (it is never sent a probe)", async () => {
    const server = await startV2rayServer(stack.add);
    const client = clientFor({ address: server.apiAddress });
    assert.deepEqual(await client.detectLayout(), { layout: "v2ray-4", capabilities: [] });
    assert.ok(server.isAlive());
  });
});

describe("a core restarted as another release is another layout", () => {
  test("25.9 upgraded in place to 26.x: re-detection sees the new numbering", async () => {
    const xray = await startRecordingXray(stack.add, { release: "25.9.5" });
    const client = clientFor({ address: xray.address });
    assert.equal((await client.detectLayout()).layout, "xray-25.1");
    await xray.restart("26.5.10");
    await waitFor(async () => (await client.getSysStats().catch(() => undefined)) !== undefined, {
      timeoutMs: 5000,
      what: "the restarted core answers",
    });
    assert.equal(client.layout, "xray-25.1", "nothing changes until the core is asked again");
    assert.deepEqual(await client.redetectLayout(), {
      layout: "xray-25.10",
      capabilities: ["listing", "online_users"],
    });
  });
});

describe("the stand-in reads bytes like the release it pretends to be", () => {
  test("each layout's inbounds land with stream and sniffing settings on a core of that layout", async () => {
    for (const release of ["1.8.13", "24.9.30", "25.1.1", "26.5.10"] as const) {
      const xray = await startRecordingXray(stack.add, { release });
      const client = clientFor({ address: xray.address });
      const { layout } = await client.detectLayout();
      for (const name of Object.keys(XRAY_GOLDEN_INPUTS)) await client.addInbound(built(name, layout));
      const reality = xray.inbounds.get("r")?.receiver;
      assert.equal(reality?.streamSettings?.securityType, "xray.transport.internet.reality.Config", release);
      assert.equal(reality?.sniffingSettings?.routeOnly, true, release);
      assert.equal(xray.inbounds.get("g")?.receiver?.streamSettings?.protocolName, "grpc", release);
      assert.equal(xray.inbounds.get("s")?.users.size, 1, release);
    }
  });

  test("25.10 bytes on a 25.9 core fail like the issue says: cannot parse invalid wire-format data", async () => {
    const xray = await startRecordingXray(stack.add, { release: "25.9.5" });
    const wrong = clientFor({
      address: xray.address,
      layout: "xray-25.10",
      isLayoutPinned: true,
      capabilities: [],
    });
    await assert.rejects(wrong.addInbound(built("trojanGrpcTls", "xray-25.10")), (error: Error) => {
      assert.match(error.message, /cannot parse invalid wire-format data/);
      return true;
    });
    assert.equal(xray.inbounds.size, 0);
  });

  test("25.9 bytes on a 26.x core are silently wrong: the inbound comes up without its TLS", async () => {
    const xray = await startRecordingXray(stack.add, { release: "26.5.10" });
    const wrong = clientFor({
      address: xray.address,
      layout: "xray-25.1",
      isLayoutPinned: true,
      capabilities: [],
    });
    await wrong.addInbound(built("trojanGrpcTls", "xray-25.1"));
    assert.equal(xray.inbounds.get("g")?.receiver?.streamSettings, undefined);
  });

  test("SS-2022 users of the other form are refused, not half-added", async () => {
    const legacyCore = await startRecordingXray(stack.add, { release: "24.9.30" });
    const wrong = clientFor({
      address: legacyCore.address,
      layout: "xray-25.1",
      isLayoutPinned: true,
      capabilities: [],
    });
    await assert.rejects(wrong.addInbound(built("ss2022", "xray-25.1")), /bad key/);
    assert.equal(legacyCore.inbounds.size, 0);
  });
});
