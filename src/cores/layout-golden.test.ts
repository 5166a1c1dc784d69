// The golden bytes of every Xray wire layout, decoded in full by `protoc --decode` against that
// layout's own .proto files (the project's, written from each release's .proto facts), and shown
// NOT to decode against the others': a field on another layout's number cannot pass. The layout
// probe's bytes are checked the same way: each is accepted by exactly the layouts it should be.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  layoutProtoFiles,
  ProtocError,
  protocDecode,
  protocDecodeTree,
  unknownFields,
} from "../../test/support/protoc.ts";
import { buildUser } from "./inbound-builder/build.ts";
import { RECEIVER_PROBES } from "./layout-probe.ts";
import type { WireLayout } from "./wire-layout.ts";
import { xrayApiFor } from "./xray-api.ts";
import { XRAY_GOLDEN_HEX_BY_LAYOUT, XRAY_GOLDEN_INPUTS } from "./xray-golden.fixture.ts";

type XrayLayout = keyof typeof XRAY_GOLDEN_HEX_BY_LAYOUT;
const LAYOUTS = Object.keys(XRAY_GOLDEN_HEX_BY_LAYOUT) as XrayLayout[];
const ADD_INBOUND = "xray.app.proxyman.command.AddInboundRequest";
const bytesOf = (hex: string) => new Uint8Array(Buffer.from(hex, "hex"));

function golden(layout: XrayLayout, name: string): Uint8Array {
  const set: Record<string, string> = XRAY_GOLDEN_HEX_BY_LAYOUT[layout];
  return bytesOf(set[name] ?? "");
}

/** The sections an input must decode to (names only appear where the numbers matched). */
function expectedSections(name: string): RegExp[] {
  const input = XRAY_GOLDEN_INPUTS[name] as { streamSettings?: object; sniffing?: object };
  const sections = [/port_list \{\n\s+range \{\n\s+From: \d+/, /listen \{\n\s+ip: /];
  if (input.streamSettings !== undefined)
    sections.push(/stream_settings \{\n\s+(security_type|transport_settings|protocol_name)/);
  if (input.sniffing !== undefined) sections.push(/sniffing_settings \{\n\s+enabled: true/);
  return sections;
}

/** Whether `bytes` decode as AddInboundRequest against `layout`'s files exactly as `reference` did. */
function decodesLike(layout: WireLayout, bytes: Uint8Array, reference: string): boolean {
  try {
    const tree = protocDecodeTree(layout, ADD_INBOUND, bytes);
    return unknownFields(tree).length === 0 && tree === reference;
  } catch (error) {
    if (error instanceof ProtocError) return false;
    throw error;
  }
}

describe("each layout's golden AddInbound bytes decode in full against its own .proto files", () => {
  for (const layout of LAYOUTS) {
    for (const name of Object.keys(XRAY_GOLDEN_INPUTS)) {
      test(`${layout}: ${name}`, () => {
        const tree = protocDecodeTree(layout, ADD_INBOUND, golden(layout, name));
        assert.deepEqual(unknownFields(tree), [], tree);
        for (const section of expectedSections(name)) assert.match(tree, section);
      });
    }
  }

  test("SS-2022 users: the user record itself before 25.1, a protocol.User with an Account after", () => {
    const legacy = protocDecodeTree("xray-24.9", ADD_INBOUND, golden("xray-24.9", "ss2022"));
    assert.match(legacy, /users \{\n\s+key: "AQEBAQEBAQEBAQEBAQEBAQ=="\n\s+email: "d@t"\n\s+\}/);
    const account = protocDecodeTree("xray-25.1", ADD_INBOUND, golden("xray-25.1", "ss2022"));
    assert.match(
      account,
      /users \{\n\s+email: "d@t"\n\s+account \{\n\s+type: "xray.proxy.shadowsocks_2022.Account"/,
    );
    assert.match(
      account,
      /value <xray.proxy.shadowsocks_2022.Account> \{\n\s+key: "AQEBAQEBAQEBAQEBAQEBAQ=="/,
    );
  });
});

describe("golden bytes do not decode against the files of a layout they are not for", () => {
  for (const layout of LAYOUTS) {
    for (const other of LAYOUTS.filter((candidate) => candidate !== layout)) {
      test(`${layout} bytes read as ${other}`, () => {
        const differing = Object.keys(XRAY_GOLDEN_INPUTS).filter(
          (name) => golden(layout, name).toString() !== golden(other, name).toString(),
        );
        assert.ok(differing.length > 0, "layouts with identical bytes would be one layout");
        for (const name of differing) {
          const reference = protocDecodeTree(layout, ADD_INBOUND, golden(layout, name));
          assert.equal(
            decodesLike(other, golden(layout, name), reference),
            false,
            `${name} passed as ${other}`,
          );
        }
      });
    }
  }
});

describe("SS-2022 AddUser per layout", () => {
  const spec = {
    email: "g@t",
    credential: "AgICAgICAgICAgICAgICAg==",
    shadowsocksMethod: "2022-blake3-aes-128-gcm",
  };

  for (const [layout, accountType, body] of [
    ["xray-1.8", "xray.proxy.shadowsocks_2022.User", /key: "AgICAgICAgICAgICAgICAg=="\n\s+email: "g@t"/],
    ["xray-24.9", "xray.proxy.shadowsocks_2022.User", /key: "AgICAgICAgICAgICAgICAg=="\n\s+email: "g@t"/],
    ["xray-25.1", "xray.proxy.shadowsocks_2022.Account", /key: "AgICAgICAgICAgICAgICAg=="/],
    ["xray-25.10", "xray.proxy.shadowsocks_2022.Account", /key: "AgICAgICAgICAgICAgICAg=="/],
  ] as const) {
    test(`${layout}: the account is ${accountType}, with the email inside where the core reads it from there`, () => {
      const user = buildUser("shadowsocks", layout, spec);
      assert.ok(user.ok);
      assert.equal(user.value.accountType, accountType);
      const request = xrayApiFor(layout).addUser("s", user.value).request;
      const tree = protocDecodeTree(layout, "xray.app.proxyman.command.AlterInboundRequest", request);
      assert.deepEqual(unknownFields(tree), [], tree);
      assert.match(
        tree,
        new RegExp(`value <${accountType.replaceAll(".", "\\.")}> \\{\\n\\s+${body.source}`),
      );
    });
  }
});

describe("the layout probe's receiver bytes, as protoc reads them", () => {
  const RECEIVER = "xray.app.proxyman.ReceiverConfig";
  const parses = (layout: WireLayout, bytes: Uint8Array) => {
    try {
      return unknownFields(protocDecode(layout, RECEIVER, bytes)).length === 0;
    } catch (error) {
      if (error instanceof ProtocError) return false;
      throw error;
    }
  };

  test("the control parses nowhere", () => {
    for (const layout of LAYOUTS) assert.equal(parses(layout, RECEIVER_PROBES.control), false, layout);
  });

  test("stream settings at 3 parse only where 3 is stream_settings (25.10 and later)", () => {
    assert.deepEqual(
      LAYOUTS.map((layout) => [layout, parses(layout, RECEIVER_PROBES.streamAt3)]),
      [
        ["xray-1.8", false],
        ["xray-24.9", false],
        ["xray-25.1", false],
        ["xray-25.10", true],
      ],
    );
  });

  test("sniffing at 7 parses where 7 is sniffing_settings, fails where it is domain_override (1.8)", () => {
    assert.equal(parses("xray-24.9", RECEIVER_PROBES.sniffingAt7), true);
    assert.equal(parses("xray-25.1", RECEIVER_PROBES.sniffingAt7), true);
    assert.equal(parses("xray-1.8", RECEIVER_PROBES.sniffingAt7), false);
  });

  test("each layout is decoded with its own variant files only", () => {
    assert.ok(layoutProtoFiles("xray-1.8").includes("xray/app/proxyman_r8.proto"));
    assert.ok(layoutProtoFiles("xray-24.9").includes("xray/proxy/shadowsocks_2022_legacy.proto"));
    assert.ok(!layoutProtoFiles("xray-25.10").some((file) => /_r[78]\.proto|_legacy/.test(file)));
  });
});
