// The builder's bytes: V2Ray output equals the probe's golden bytes (accepted by the real core),
// Xray output equals golden bytes checked field by field against Xray-core's .proto numbers.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { AddInboundRequestSchema as V2AddInbound } from "../gen/v2ray/app/proxyman_command_pb.ts";
import { AddInboundRequestSchema as XrayAddInbound } from "../gen/xray/app/proxyman_command_pb.ts";
import type { CoreFlavor } from "./core-types.ts";
import type { WireLayout } from "./wire-layout.ts";

type XrayLayout = Exclude<WireLayout, "v2ray-4">;
const XRAY_LAYOUTS = Object.keys(XRAY_GOLDEN_HEX_BY_LAYOUT) as XrayLayout[];

import { buildInbound, buildUser } from "./inbound-builder/build.ts";
import type { BuiltInbound } from "./inbound-builder/built.ts";
import { v2rayApi } from "./v2ray-api.ts";
import { xrayApiFor } from "./xray-api.ts";
import { XRAY_GOLDEN_HEX_BY_LAYOUT, XRAY_GOLDEN_INPUTS } from "./xray-golden.fixture.ts";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const UUID = "11111111-1111-4111-8111-111111111111";

function built(json: unknown, target: CoreFlavor | XrayLayout): BuiltInbound {
  const result = buildInbound(json, target);
  assert.ok(result.ok, JSON.stringify(result));
  return result.value;
}

// Probe §3: bytes the real V2Ray 4.34 accepted.
const PROBE_ADD_INBOUND =
  "0ad6010a09766c6573732d746370123c0a2676327261792e636f72652e6170702e70726f78796d616e2e5265636569766572436f6e66696712120a0808eda40110eda40112060a047f0000011a8a010a2576327261792e636f72652e70726f78792e766c6573732e696e626f756e642e436f6e66696712610a59120d766c6573732d7463702d6140741a480a1e76327261792e636f72652e70726f78792e766c6573732e4163636f756e7412260a2431313131313131312d313131312d343131312d383131312d31313131313131313131313112046e6f6e65";
const PROBE_ADD_USER =
  "0a09766c6573732d746370128f010a3076327261792e636f72652e6170702e70726f78796d616e2e636f6d6d616e642e416464557365724f7065726174696f6e125b0a59120d766c6573732d7463702d6240741a480a1e76327261792e636f72652e70726f78792e766c6573732e4163636f756e7412260a2432323232323232322d323232322d343232322d383232322d323232323232323232323232";
const PROBE_REMOVE_USER =
  "0a09766c6573732d74637012460a3376327261792e636f72652e6170702e70726f78796d616e2e636f6d6d616e642e52656d6f7665557365724f7065726174696f6e120f0a0d766c6573732d7463702d624074";

describe("V2Ray output equals the probe's golden bytes", () => {
  test("AddInbound vless-tcp", () => {
    const inbound = built(
      {
        tag: "vless-tcp",
        port: 21101,
        listen: "127.0.0.1",
        protocol: "vless",
        settings: { clients: [{ id: UUID, email: "vless-tcp-a@t" }], decryption: "none" },
      },
      "v2ray",
    );
    assert.equal(inbound.flavor, "v2ray");
    if (inbound.flavor === "v2ray") {
      assert.equal(
        hex(toBinary(V2AddInbound, create(V2AddInbound, { inbound: inbound.config }))),
        PROBE_ADD_INBOUND,
      );
    }
    assert.equal(hex(v2rayApi.addInbound(inbound).request), PROBE_ADD_INBOUND);
  });

  test("AlterInbound add user, remove user, QueryStats", () => {
    const user = buildUser("vless", "v2ray", {
      email: "vless-tcp-b@t",
      credential: "22222222-2222-4222-8222-222222222222",
    });
    assert.ok(user.ok);
    assert.equal(hex(v2rayApi.addUser("vless-tcp", user.value).request), PROBE_ADD_USER);
    assert.equal(hex(v2rayApi.removeUser("vless-tcp", "vless-tcp-b@t").request), PROBE_REMOVE_USER);
    assert.equal(hex(v2rayApi.queryStats("user>>>", true).request), "0a07757365723e3e3e1001");
  });
});

describe("Xray output equals the golden bytes of each wire layout", () => {
  for (const layout of XRAY_LAYOUTS) {
    for (const [name, json] of Object.entries(XRAY_GOLDEN_INPUTS)) {
      test(`${layout}: ${name}`, () => {
        const golden: Record<string, string> = XRAY_GOLDEN_HEX_BY_LAYOUT[layout];
        const inbound = built(json, layout);
        assert.equal(inbound.flavor, "xray");
        assert.equal(inbound.layout, layout);
        if (inbound.flavor === "xray") {
          assert.equal(
            hex(toBinary(XrayAddInbound, create(XrayAddInbound, { inbound: inbound.config }))),
            golden[name],
          );
        }
        assert.equal(hex(xrayApiFor(layout).addInbound(inbound).request), golden[name]);
      });
    }
  }

  test('"xray" builds for the newest layout, xray-25.10', () => {
    assert.equal(built(XRAY_GOLDEN_INPUTS.reality, "xray").layout, "xray-25.10");
  });

  test("bytes built for one layout are refused by the client API of another", () => {
    const inbound = built(XRAY_GOLDEN_INPUTS.reality, "xray-25.10");
    assert.throws(
      () => xrayApiFor("xray-25.1").addInbound(inbound),
      (error: { code?: string; details?: { message: string }[] }) => {
        assert.equal(error.code, "core_request_refused");
        assert.match(
          error.details?.[0]?.message ?? "",
          /built for wire layout xray-25.10, the core speaks xray-25.1/,
        );
        return true;
      },
    );
  });

  test("Xray AlterInbound AddUser for SS-2022 carries the shadowsocks_2022 account", () => {
    const user = buildUser("shadowsocks", "xray", {
      email: "g@t",
      credential: "AgICAgICAgICAgICAgICAg==",
      shadowsocksMethod: "2022-blake3-aes-128-gcm",
    });
    assert.ok(user.ok);
    assert.equal(user.value.accountType, "xray.proxy.shadowsocks_2022.Account");
    // tag "s"; operation {type "xray.app.proxyman.command.AddUserOperation", value {user {email "g@t",
    // account {type "xray.proxy.shadowsocks_2022.Account", value {key "AgIC…"}}}}}
    assert.equal(
      hex(xrayApiFor("xray-25.10").addUser("s", user.value).request),
      "0a017312780a2a787261792e6170702e70726f78796d616e2e636f6d6d616e642e416464557365724f7065726174696f6e124a0a48120367" +
        "40741a410a23787261792e70726f78792e736861646f77736f636b735f323032322e4163636f756e74121a0a184167494341674943416749" +
        "43416749434167494341673d3d",
    );
  });
});
