// XHTTP inbounds through the API on the stand-in Xray of each release (test/support/recording-grpc.ts,
// layouts detected by the real probe): the vless-xhttp-reality starter reaches 25.1.1 and 26.x and
// arrives in the bytes protoc reads as that layout's splithttp Config; 24.9.30 and V2Ray answer 422
// core_unsupported naming the core; scStreamUpServerSecs needs the 25.10 layout.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { toBinary } from "@bufbuild/protobuf";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import { protocDecodeTree, unknownFields } from "../../../test/support/protoc.ts";
import { createInbound, registerServer } from "../../../test/support/provisioning.ts";
import { startRecordingXray, type XrayRelease } from "../../../test/support/recording-grpc.ts";
import { createTemplate, expectProblem, request } from "../../../test/support/templates.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import type { WireLayout } from "../../cores/wire-layout.ts";
import { InboundHandlerConfigSchema } from "../../gen/xray/core_pb.ts";
import { installStarters } from "../templates/starters.ts";

const stack = new CleanupStack();
let t: TestApp;
let starterId: string;
let keepaliveId: string;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1500" });
  await installStarters(t.deps.services.templates);
  const templates = (await request(t, "GET", "/api/templates")).json() as { id: string; name: string }[];
  starterId = templates.find((template) => template.name === "vless-xhttp-reality")?.id ?? "";
  const keepalive = await createTemplate(t, {
    name: "xhttp-keepalive",
    config: {
      protocol: "vless",
      settings: { decryption: "none" },
      streamSettings: {
        network: "xhttp",
        xhttpSettings: { path: "/ka", mode: "stream-up", extra: { scStreamUpServerSecs: "20-80" } },
      },
    },
  });
  keepaliveId = keepalive.id as string;
  assert.deepEqual(keepalive.supported_cores, ["xray"]);
});
after(async () => {
  await t.close();
  await stack.run();
});

async function serverOn(release: XrayRelease, layout: WireLayout) {
  const xray = await startRecordingXray(stack.add, { release });
  const server = await registerServer(t, Number(xray.address.split(":")[1]));
  const tested = (await request(t, "POST", `/api/servers/${server.id}/test`)).json();
  assert.equal(tested.wire_layout, layout);
  return { xray, serverId: server.id };
}

describe("XHTTP inbounds per core release", () => {
  for (const [release, layout] of [
    ["25.1.1", "xray-25.1"],
    ["26.5.10", "xray-25.10"],
  ] as const) {
    test(`${release}: the starter is added, its splithttp settings in ${layout}'s numbers`, async () => {
      const { xray, serverId } = await serverOn(release, layout);
      const inbound = await createInbound(t, serverId, { template_id: starterId, port: await freePort() });
      assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
      const stored = xray.inbounds.get(inbound.tag);
      assert.ok(stored !== undefined);
      const bytes = toBinary(InboundHandlerConfigSchema, stored.config);
      const tree = protocDecodeTree(layout, "xray.core.InboundHandlerConfig", bytes);
      assert.deepEqual(unknownFields(tree), [], tree);
      assert.match(
        tree,
        /value <xray\.transport\.internet\.splithttp\.Config> \{\n\s+path: "\/xhttp"\n\s+mode: "auto"/,
      );
      assert.match(tree, /security_type: "xray\.transport\.internet\.reality\.Config"/);
    });
  }

  test("24.9.30: 422 core_unsupported, the problem naming the release and what XHTTP needs", async () => {
    const { xray, serverId } = await serverOn("24.9.30", "xray-24.9");
    const adds = () => xray.calls.filter((call) => call.path.endsWith("/AddInbound")).length;
    const before = adds(); // the layout probe's own refused AddInbounds
    const res = await request(t, "POST", `/api/servers/${serverId}/inbounds`, {
      template_id: starterId,
      port: await freePort(),
    });
    const errors = expectProblem(res, 422, "core_unsupported");
    assert.match(JSON.stringify(errors), /Xray 24\.x .*layout xray-24\.9.*XHTTP needs Xray 25\.1 or later/);
    assert.equal(xray.inbounds.size, 0);
    assert.equal(adds(), before, "nothing was sent");
  });

  test("scStreamUpServerSecs: 422 core_unsupported on 25.1.1, added on 25.10.15", async () => {
    const old = await serverOn("25.1.1", "xray-25.1");
    const refused = await request(t, "POST", `/api/servers/${old.serverId}/inbounds`, {
      template_id: keepaliveId,
      port: await freePort(),
    });
    const errors = expectProblem(refused, 422, "core_unsupported");
    assert.match(JSON.stringify(errors), /scStreamUpServerSecs/);
    const current = await serverOn("25.10.15", "xray-25.10");
    const inbound = await createInbound(t, current.serverId, {
      template_id: keepaliveId,
      port: await freePort(),
    });
    assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
  });

  test("V2Ray: the Xray-only template is 422 core_unsupported", async () => {
    const { serverId } = await serverOn("26.5.10", "xray-25.10");
    const pin = await request(t, "PUT", `/api/servers/${serverId}`, { wire_layout: "v2ray-4" });
    assert.equal(pin.statusCode, 200, pin.body);
    const res = await request(t, "POST", `/api/servers/${serverId}/inbounds`, {
      template_id: starterId,
      port: await freePort(),
    });
    expectProblem(res, 422, "core_unsupported");
  });
});
