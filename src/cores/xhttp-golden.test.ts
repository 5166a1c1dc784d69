// XHTTP's golden bytes per wire layout: every mode under TLS and REALITY built for xray-25.1 and
// xray-25.10, decoded in full by `protoc --decode` against that layout's own .proto files, the
// transport's settings equal to what protoc encodes from the hand-written expectation, and the
// layouts without XHTTP (V2Ray 4.x, Xray 1.8, Xray 24.x) refusing it with a problem that names them.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ProtocError,
  protocDecode,
  protocDecodeTree,
  protocEncode,
  unknownFields,
} from "../../test/support/protoc.ts";
import { buildInbound } from "./inbound-builder/build.ts";
import type { BuiltInbound } from "./inbound-builder/built.ts";
import { decodeReceiver } from "./inbound-builder/xray-variants.ts";
import type { WireLayout } from "./wire-layout.ts";
import {
  XHTTP_GOLDEN_HEX,
  XHTTP_GOLDEN_INPUTS,
  XHTTP_KEEPALIVE_INPUT,
  XHTTP_MODES_UNDER_TEST,
  xhttpExpectedText,
} from "./xhttp-golden.fixture.ts";
import { xrayApiFor } from "./xray-api.ts";

const ADD_INBOUND = "xray.app.proxyman.command.AddInboundRequest";
const SPLITHTTP = "xray.transport.internet.splithttp.Config";
const XHTTP_LAYOUTS = ["xray-25.1", "xray-25.10"] as const;

function built(json: object, layout: WireLayout): BuiltInbound {
  const result = buildInbound(json, layout);
  assert.ok(result.ok, JSON.stringify(!result.ok && result.problems));
  return result.value;
}

const request = (inbound: BuiltInbound) => xrayApiFor(inbound.layout).addInbound(inbound).request;
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** The splithttp Config bytes inside a built inbound, read back with protobuf-es. */
function transportBytes(inbound: BuiltInbound, layout: "xray-25.1" | "xray-25.10"): Uint8Array {
  if (inbound.flavor !== "xray") throw new Error("not an Xray inbound");
  const receiver = inbound.config.receiverSettings?.value ?? new Uint8Array();
  const stream = decodeReceiver(layout === "xray-25.10" ? "r6" : "r7", receiver).streamSettings;
  const settings = stream?.transportSettings?.[0]?.settings;
  assert.equal(settings?.type, SPLITHTTP);
  return settings?.value ?? new Uint8Array();
}

describe("XHTTP golden bytes on each layout that has it", () => {
  for (const layout of XHTTP_LAYOUTS) {
    for (const mode of XHTTP_MODES_UNDER_TEST) {
      for (const security of ["tls", "reality"] as const) {
        const name = `${mode}/${security}`;
        test(`${layout}: ${name}`, () => {
          const inbound = built(XHTTP_GOLDEN_INPUTS[name] ?? {}, layout);
          const bytes = request(inbound);
          assert.equal(hex(bytes), XHTTP_GOLDEN_HEX[layout][name], "the pinned bytes");
          const tree = protocDecodeTree(layout, ADD_INBOUND, bytes);
          assert.deepEqual(unknownFields(tree), [], tree);
          // The transport's TransportConfig and the StreamConfig both name it as Xray registers it.
          assert.equal(tree.match(/^\s+protocol_name: "splithttp"$/gm)?.length, 2, tree);
          const securityType = security === "tls" ? "tls" : "reality";
          assert.match(tree, new RegExp(`security_type: "xray.transport.internet.${securityType}.Config"`));
          // Client-only settings stay out of the core's message.
          assert.doesNotMatch(tree, /198\.51\.100\.7|X-Forwarded-For/);
          const expected = protocEncode(layout, SPLITHTTP, xhttpExpectedText(mode));
          assert.equal(
            hex(transportBytes(inbound, layout)),
            hex(expected),
            "protoc's bytes of the expectation",
          );
        });
      }
    }
  }

  test("xray-25.10: scStreamUpServerSecs at 11, as protoc encodes it from the expectation", () => {
    const inbound = built(XHTTP_KEEPALIVE_INPUT, "xray-25.10");
    const bytes = request(inbound);
    assert.equal(hex(bytes), XHTTP_GOLDEN_HEX["xray-25.10"].keepalive);
    const tree = protocDecodeTree("xray-25.10", ADD_INBOUND, bytes);
    assert.deepEqual(unknownFields(tree), [], tree);
    assert.match(tree, /scStreamUpServerSecs \{\n\s+from: 20\n\s+to: 80/);
    const expected = protocEncode("xray-25.10", SPLITHTTP, xhttpExpectedText("stream-up", true));
    assert.equal(hex(transportBytes(inbound, "xray-25.10")), hex(expected));
  });

  test("xray-25.1 refuses scStreamUpServerSecs, and its files do not read field 11", () => {
    const result = buildInbound(XHTTP_KEEPALIVE_INPUT, "xray-25.1");
    assert.ok(!result.ok);
    assert.deepEqual(
      result.problems.map((p) => p.path),
      ["streamSettings.xhttpSettings.extra.scStreamUpServerSecs"],
    );
    assert.match(result.problems[0]?.message ?? "", /25\.1\.1 reads that field as xmux/);
    const keepalive = transportBytes(built(XHTTP_KEEPALIVE_INPUT, "xray-25.10"), "xray-25.10");
    const unknown = unknownFields(protocDecode("xray-25.1", SPLITHTTP, keepalive));
    assert.ok(
      unknown.some((line) => /^11 \{/.test(line)),
      unknown.join("\n"),
    );
  });

  test("an explicit mode auto is the same as none; splithttp is xhttp's old name", () => {
    const input = XHTTP_GOLDEN_INPUTS["auto/tls"] as { streamSettings: { xhttpSettings: object } };
    const explicit = {
      ...input,
      streamSettings: {
        ...input.streamSettings,
        network: "splithttp",
        xhttpSettings: undefined,
        splithttpSettings: { ...input.streamSettings.xhttpSettings, mode: "auto" },
      },
    };
    assert.equal(hex(request(built(explicit, "xray-25.10"))), XHTTP_GOLDEN_HEX["xray-25.10"]["auto/tls"]);
  });
});

describe("XHTTP bytes of one layout do not read as the other's", () => {
  for (const [layout, other] of [
    ["xray-25.1", "xray-25.10"],
    ["xray-25.10", "xray-25.1"],
  ] as const) {
    test(`${layout} as ${other}`, () => {
      for (const name of Object.keys(XHTTP_GOLDEN_INPUTS)) {
        const bytes = Buffer.from(XHTTP_GOLDEN_HEX[layout][name] ?? "", "hex");
        const reference = protocDecodeTree(layout, ADD_INBOUND, bytes);
        let same = false;
        try {
          const tree = protocDecodeTree(other, ADD_INBOUND, bytes);
          same = unknownFields(tree).length === 0 && tree === reference;
        } catch (error) {
          if (!(error instanceof ProtocError)) throw error;
        }
        assert.equal(same, false, `${name} passed as ${other}`);
      }
    });
  }
});

describe("layouts without XHTTP refuse it, naming the core", () => {
  for (const [layout, names] of [
    ["v2ray-4", /V2Ray 4\.x/],
    ["xray-1.8", /Xray 1\.8\.x \(layout xray-1\.8\).*needs Xray 25\.1 or later/],
    ["xray-24.9", /Xray 24\.x .*\(layout xray-24\.9\).*needs Xray 25\.1 or later/],
  ] as const) {
    test(layout, () => {
      for (const input of [...Object.values(XHTTP_GOLDEN_INPUTS), XHTTP_KEEPALIVE_INPUT]) {
        const result = buildInbound(input, layout);
        assert.ok(!result.ok);
        // REALITY is V2Ray's second problem; the transport's is always there and alone for Xray.
        const network = result.problems.filter((p) => p.path === "streamSettings.network");
        assert.equal(network.length, 1, JSON.stringify(result.problems));
        assert.match(network[0]?.message ?? "", names);
        if (layout !== "v2ray-4") assert.equal(result.problems.length, 1, JSON.stringify(result.problems));
      }
    });
  }

  test("their .proto files do not know the splithttp type at all", () => {
    const bytes = transportBytes(built(XHTTP_GOLDEN_INPUTS["auto/tls"] ?? {}, "xray-25.10"), "xray-25.10");
    for (const layout of ["xray-1.8", "xray-24.9"] as const) {
      assert.throws(() => protocDecode(layout, SPLITHTTP, bytes), ProtocError);
    }
  });
});
