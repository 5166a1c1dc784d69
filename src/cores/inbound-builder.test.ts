// The builder, without I/O: what a flavor cannot hold and every unknown key is named with its
// path; buildUser picks the account type. (Bytes: inbound-builder.golden.test.ts.)

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { CoreFlavor } from "./core-types.ts";
import { buildInbound, buildUser } from "./inbound-builder/build.ts";
import type { BuiltInbound } from "./inbound-builder/built.ts";
import { CERT, KEY, XRAY_GOLDEN_INPUTS } from "./xray-golden.fixture.ts";

const UUID = "11111111-1111-4111-8111-111111111111";

function built(json: unknown, flavor: CoreFlavor): BuiltInbound {
  const result = buildInbound(json, flavor);
  assert.ok(result.ok, JSON.stringify(result));
  return result.value;
}

function problems(json: unknown, flavor: CoreFlavor): string {
  const result = buildInbound(json, flavor);
  assert.equal(result.ok, false, "expected problems");
  return result.ok ? "" : JSON.stringify(result.problems);
}

describe("what V2Ray 4.34 cannot hold is named, per flavor", () => {
  const vless = {
    tag: "t",
    port: 443,
    protocol: "vless",
    settings: { clients: [{ id: UUID, email: "a@t" }] },
  };
  const cases: [string, object, RegExp][] = [
    [
      "REALITY",
      { ...vless, streamSettings: { security: "reality", realitySettings: {} } },
      /streamSettings.security.*REALITY is not supported by V2Ray/,
    ],
    [
      "grpc",
      { ...vless, streamSettings: { network: "grpc" } },
      /streamSettings.network.*grpc transport is not supported by V2Ray/,
    ],
    [
      "httpupgrade",
      { ...vless, streamSettings: { network: "httpupgrade" } },
      /httpupgrade transport is not supported by V2Ray/,
    ],
    [
      "flow",
      { ...vless, settings: { clients: [{ id: UUID, email: "a@t", flow: "xtls-rprx-vision" }] } },
      /flow.*not supported by V2Ray/,
    ],
    [
      "SS-2022",
      {
        tag: "t",
        port: 1,
        protocol: "shadowsocks",
        settings: { method: "2022-blake3-aes-128-gcm", password: "AAAAAAAAAAAAAAAAAAAAAA==" },
      },
      /Shadowsocks 2022 is not supported by V2Ray/,
    ],
    [
      "a second SS user",
      {
        tag: "t",
        port: 1,
        protocol: "shadowsocks",
        settings: {
          method: "aes-128-gcm",
          clients: [
            { password: "a", email: "a@t" },
            { password: "b", email: "b@t" },
          ],
        },
      },
      /exactly one user/,
    ],
    [
      "TLS minVersion",
      {
        ...vless,
        streamSettings: {
          security: "tls",
          tlsSettings: { minVersion: "1.3", certificates: [{ certificate: CERT, key: KEY }] },
        },
      },
      /minVersion.*not supported by V2Ray/,
    ],
    [
      "ws host",
      { ...vless, streamSettings: { network: "ws", wsSettings: { host: "x" } } },
      /wsSettings.host.*not supported by V2Ray/,
    ],
  ];
  for (const [name, json, pattern] of cases) {
    test(`${name}: refused for v2ray`, () => assert.match(problems(json, "v2ray"), pattern));
  }

  test("the same REALITY / grpc / SS-2022 / vision inbounds build for xray", () => {
    for (const name of ["reality", "trojanGrpcTls", "ss2022", "httpupgrade"])
      built(XRAY_GOLDEN_INPUTS[name], "xray");
  });
});

describe("unknown and unsupported keys are reported, never dropped", () => {
  test("unknown keys at every level, with their paths", () => {
    const json = {
      tag: "t",
      port: 443,
      protocol: "vless",
      extra: 1,
      settings: { clients: [{ id: UUID, email: "a@t", nickname: "x" }], fallbacks: [] },
      streamSettings: {
        network: "ws",
        wsSettings: { path: "/", pathh: "/x" },
        sockopt: { mark: 1 },
        tcpSettings: {},
      },
      sniffing: { enabled: true, domainsExcluded: ["x"] },
    };
    const text = problems(json, "xray");
    for (const path of [
      "extra",
      "settings.clients[0].nickname",
      "settings.fallbacks",
      "streamSettings.wsSettings.pathh",
      "streamSettings.sockopt",
      "streamSettings.tcpSettings",
      "sniffing.domainsExcluded",
    ]) {
      assert.ok(text.includes(`"path":"${path}"`), `${path} missing in ${text}`);
    }
  });

  test("harmless Xray keys are accepted: client-side TLS and REALITY hints, vmess security, grpc multiMode", () => {
    const tls = {
      security: "tls",
      tlsSettings: {
        allowInsecure: false,
        fingerprint: "chrome",
        certificates: [{ certificate: CERT, key: KEY, oneTimeLoading: true }],
      },
    };
    built(
      {
        tag: "t",
        port: 1,
        protocol: "vmess",
        remark: "x",
        settings: { clients: [{ id: UUID, email: "a@t", security: "auto", alterId: 0 }] },
        streamSettings: tls,
      },
      "xray",
    );
    const reality = {
      ...(XRAY_GOLDEN_INPUTS.reality as { streamSettings: { realitySettings: object } }).streamSettings
        .realitySettings,
      publicKey: "x",
      spiderX: "/",
      fingerprint: "chrome",
    };
    built(
      {
        ...XRAY_GOLDEN_INPUTS.reality,
        streamSettings: { network: "tcp", security: "reality", realitySettings: reality },
      },
      "xray",
    );
    built(
      {
        tag: "t",
        port: 1,
        protocol: "trojan",
        streamSettings: { network: "grpc", grpcSettings: { serviceName: "s", multiMode: true } },
      },
      "xray",
    );
  });

  test("certificate files on the core host are refused (paste PEM instead)", () => {
    const json = {
      tag: "t",
      port: 1,
      protocol: "trojan",
      streamSettings: {
        security: "tls",
        tlsSettings: { certificates: [{ certificateFile: "/etc/x.crt", keyFile: "/etc/x.key" }] },
      },
    };
    assert.match(problems(json, "xray"), /certificateFile.*paste the PEM/);
  });

  test("vision needs tcp with tls or reality", () => {
    const json = {
      tag: "t",
      port: 1,
      protocol: "vless",
      settings: { clients: [{ id: UUID, email: "a@t", flow: "xtls-rprx-vision" }] },
      streamSettings: { network: "ws" },
    };
    assert.match(problems(json, "xray"), /xtls-rprx-vision needs network tcp/);
  });

  test("arbitrary JSON never throws: it builds or names problems", () => {
    fc.assert(
      fc.property(fc.anything(), fc.constantFrom<CoreFlavor>("v2ray", "xray"), (json, flavor) => {
        const result = buildInbound(json, flavor);
        return result.ok || result.problems.length > 0;
      }),
      { numRuns: 500 },
    );
  });

  test("any extra top-level key is named", () => {
    const known = new Set([
      "tag",
      "port",
      "listen",
      "protocol",
      "settings",
      "streamSettings",
      "sniffing",
      "remark",
      "allocate",
    ]);
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((key) => !known.has(key) && key !== "__proto__"),
        fc.jsonValue(),
        (key, value) => {
          const result = buildInbound({ tag: "t", port: 1, protocol: "trojan", [key]: value }, "xray");
          return !result.ok && result.problems.some((problem) => problem.path === key);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("buildUser", () => {
  test("picks the account type of the protocol and flavor", () => {
    const cases = [
      ["vless", "v2ray", UUID, "v2ray.core.proxy.vless.Account"],
      ["vmess", "xray", UUID, "xray.proxy.vmess.Account"],
      ["trojan", "xray", "pw", "xray.proxy.trojan.Account"],
    ] as const;
    for (const [protocol, flavor, credential, type] of cases) {
      const result = buildUser(protocol, flavor, { email: "a@t", credential });
      assert.ok(result.ok);
      assert.equal(result.value.accountType, type);
    }
    const ss = buildUser("shadowsocks", "xray", {
      email: "a@t",
      credential: "pw",
      shadowsocksMethod: "aes-256-gcm",
    });
    assert.ok(ss.ok && ss.value.accountType === "xray.proxy.shadowsocks.Account");
  });

  test("refuses empty or '>>>' emails, bad UUIDs, bad SS-2022 keys, vision on V2Ray", () => {
    const bad = [
      buildUser("vless", "xray", { email: "", credential: UUID }),
      buildUser("vless", "xray", { email: "a>>>b", credential: UUID }),
      buildUser("vmess", "v2ray", { email: "a@t", credential: "not-a-uuid" }),
      buildUser("shadowsocks", "xray", {
        email: "a@t",
        credential: "short",
        shadowsocksMethod: "2022-blake3-aes-256-gcm",
      }),
      buildUser("vless", "v2ray", { email: "a@t", credential: UUID, flow: "xtls-rprx-vision" }),
      buildUser("vless", "xray", { email: "a@t", credential: UUID, level: 300 }),
    ];
    for (const result of bad) assert.equal(result.ok, false, JSON.stringify(result));
  });
});
