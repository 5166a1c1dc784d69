// XHTTP in every format: links (VLESS, Trojan; VMess without extra), xray-json (all), mihomo (VLESS
// only, validated by meta-json-schema), sing-box (none: it has no XHTTP), each left-out entry with
// its reason. And gRPC and HTTPUpgrade reach every format that can carry them.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parse } from "yaml";
import { validateMihomo, validateSingbox } from "../../../test/support/format-schemas.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import type { LinkTarget, Security, Transport } from "../types.ts";
import type { SubscriptionEntry } from "./entries.ts";
import { renderPlainLinks } from "./links.ts";
import { DEFAULT_MIHOMO_BASE, renderMihomo } from "./mihomo.ts";
import { DEFAULT_SINGBOX_BASE, renderSingbox } from "./singbox.ts";
import { renderXrayJson } from "./xray-json.ts";

const UUID = "0f1e2d3c-4b5a-4697-8877-66554433aa11";
const EXTRA = {
  headers: { "User-Agent": "Mozilla/5.0" },
  xPaddingBytes: "100-1000",
  scMaxEachPostBytes: "500000",
  scMinPostsIntervalMs: "10-50",
  noGRPCHeader: true as const,
  xmux: { maxConcurrency: "16-32", hMaxRequestTimes: "600-900", hKeepAlivePeriod: 30 },
};
const XH: Transport = {
  type: "xhttp",
  path: "/xh",
  host: "cdn.example.com",
  mode: "stream-up",
  extra: EXTRA,
};
const XH_PLAIN: Transport = { type: "xhttp", path: "/xh", mode: "auto" };
const TLS: Security = { type: "tls", sni: "cdn.example.com", alpn: ["h2"], fingerprint: "chrome" };
const REALITY: Security = {
  type: "reality",
  sni: "www.example.com",
  publicKey: "q6sV8nM1oQe8gxRtgnxn6jx1yL7JXkJ6m_9zq1ZX8gU",
  shortId: "6ba85179",
  fingerprint: "chrome",
};
type StreamTarget = Exclude<LinkTarget, { protocol: "shadowsocks" }>;
const endpoint = (remark: string) => ({ host: "fra1.vpn.example.net", port: 443, remark });
const vless = (remark: string, transport: Transport, security: Security): StreamTarget => ({
  protocol: "vless",
  ...endpoint(remark),
  credential: { id: UUID, encryption: "none" },
  transport,
  security,
});
const vmess = (remark: string, transport: Transport): StreamTarget => ({
  protocol: "vmess",
  ...endpoint(remark),
  credential: { id: UUID, cipher: "aes-128-gcm" },
  transport,
  security: TLS,
});
const trojan = (remark: string, transport: Transport): StreamTarget => ({
  protocol: "trojan",
  ...endpoint(remark),
  credential: { password: "pw" },
  transport,
  security: TLS,
});

const XHTTP_TARGETS: LinkTarget[] = [
  vless("VLESS xh tls", XH, TLS),
  vless("VLESS xh reality", XH, REALITY),
  vless("VLESS xh plain", XH_PLAIN, { type: "none" }),
  vmess("VMess xh extra", XH),
  vmess("VMess xh", XH_PLAIN),
  trojan("Trojan xh", XH),
];
const entries = (targets: LinkTarget[]): SubscriptionEntry[] =>
  targets.map((target) => ({ kind: "link", target }));
const reasons = (leftOut: { name: string; reason: string }[]) =>
  Object.fromEntries(leftOut.map((item) => [item.name, item.reason]));

describe("XHTTP in every format", () => {
  test("links: VLESS and Trojan with extra; VMess only without it (its JSON has no key for extra)", () => {
    const rendered = renderPlainLinks(entries(XHTTP_TARGETS));
    assert.deepEqual(Object.keys(reasons(rendered.leftOut)), ["VMess xh extra"]);
    assert.match(reasons(rendered.leftOut)["VMess xh extra"] ?? "", /no key for XHTTP extra/);
    const decoded = rendered.body.split("\n").map(decodeLink);
    assert.deepEqual(
      decoded.map((t) => t.remark),
      ["VLESS xh tls", "VLESS xh reality", "VLESS xh plain", "VMess xh", "Trojan xh"],
    );
    for (const target of decoded) {
      const original = XHTTP_TARGETS.find((t) => t.remark === target.remark);
      assert.deepEqual(target, original);
    }
  });

  test("xray-json: every entry, xhttpSettings with path, host, mode and extra as the link has them", () => {
    const configs = JSON.parse(renderXrayJson(entries(XHTTP_TARGETS)).body) as {
      remarks: string;
      outbounds: { streamSettings?: { network: string; xhttpSettings?: Record<string, unknown> } }[];
    }[];
    assert.equal(configs.length, XHTTP_TARGETS.length);
    const first = configs[0]?.outbounds[0]?.streamSettings;
    assert.equal(first?.network, "xhttp");
    assert.deepEqual(first?.xhttpSettings, {
      path: "/xh",
      mode: "stream-up",
      host: "cdn.example.com",
      extra: EXTRA,
    });
    assert.deepEqual(configs[2]?.outbounds[0]?.streamSettings?.xhttpSettings, { path: "/xh", mode: "auto" });
  });

  test("mihomo: VLESS only, xhttp-opts as meta-json-schema has them, alpn http/1.1 without TLS", () => {
    const rendered = renderMihomo(
      entries(XHTTP_TARGETS),
      parse(DEFAULT_MIHOMO_BASE) as Record<string, never>,
    );
    const doc = parse(rendered.body) as { proxies: Record<string, unknown>[] };
    assert.ok(validateMihomo(doc), JSON.stringify(validateMihomo.errors?.slice(0, 3)));
    assert.deepEqual(reasons(rendered.leftOut), {
      "VMess xh extra": "mihomo carries XHTTP for VLESS only",
      "VMess xh": "mihomo carries XHTTP for VLESS only",
      "Trojan xh": "mihomo carries XHTTP for VLESS only",
    });
    const byName = new Map(doc.proxies.map((p) => [p.name, p]));
    const tls = byName.get("VLESS xh tls");
    assert.equal(tls?.network, "xhttp");
    assert.deepEqual(tls?.["xhttp-opts"], {
      path: "/xh",
      host: "cdn.example.com",
      mode: "stream-up",
      headers: { "User-Agent": "Mozilla/5.0" },
      "no-grpc-header": true,
      "x-padding-bytes": "100-1000",
      "sc-max-each-post-bytes": "500000",
      "sc-min-posts-interval-ms": "10-50",
      "reuse-settings": {
        "max-concurrency": "16-32",
        "h-max-request-times": "600-900",
        "h-keep-alive-period": 30,
      },
    });
    assert.deepEqual((byName.get("VLESS xh reality")?.["reality-opts"] as object) !== undefined, true);
    assert.deepEqual(byName.get("VLESS xh plain")?.alpn, ["http/1.1"]);
    assert.deepEqual(byName.get("VLESS xh plain")?.["xhttp-opts"], { path: "/xh" });
    assert.deepEqual(tls?.alpn, ["h2"]);
  });

  test("mihomo's schema has teeth for xhttp: an unknown mode or key fails it", () => {
    const doc = parse(
      renderMihomo(entries(XHTTP_TARGETS.slice(0, 1)), parse(DEFAULT_MIHOMO_BASE) as Record<string, never>)
        .body,
    ) as { proxies: { "xhttp-opts": Record<string, unknown> }[] };
    const badMode = structuredClone(doc);
    (badMode.proxies[0] as { "xhttp-opts": Record<string, unknown> })["xhttp-opts"].mode = "stream-down";
    assert.equal(validateMihomo(badMode), false);
  });

  test("sing-box: left out, every one, with the reason", () => {
    const rendered = renderSingbox(entries(XHTTP_TARGETS), DEFAULT_SINGBOX_BASE);
    assert.equal(rendered.leftOut.length, XHTTP_TARGETS.length);
    for (const item of rendered.leftOut) assert.equal(item.reason, "sing-box has no XHTTP transport");
    assert.ok(validateSingbox(JSON.parse(rendered.body)));
  });
});

describe("gRPC and HTTPUpgrade reach every format that can carry them", () => {
  const transports: Transport[] = [
    { type: "grpc", serviceName: "svc", mode: "gun" },
    { type: "grpc", serviceName: "svc", mode: "multi" },
    { type: "httpupgrade", path: "/up", host: "cdn.example.com" },
  ];
  const targets = transports.flatMap((transport, i) => [
    vless(`VLESS ${i}`, transport, TLS),
    vmess(`VMess ${i}`, transport),
    trojan(`Trojan ${i}`, transport),
  ]);
  targets.push(vless("VLESS grpc reality", transports[0] ?? XH_PLAIN, REALITY));

  test("links, xray-json, mihomo and sing-box leave none out", () => {
    const mihomo = renderMihomo(entries(targets), parse(DEFAULT_MIHOMO_BASE) as Record<string, never>);
    const singbox = renderSingbox(entries(targets), DEFAULT_SINGBOX_BASE);
    for (const rendered of [
      renderPlainLinks(entries(targets)),
      mihomo,
      singbox,
      renderXrayJson(entries(targets)),
    ]) {
      assert.deepEqual(rendered.leftOut, []);
    }
    const proxies = (parse(mihomo.body) as { proxies: Record<string, unknown>[] }).proxies;
    assert.ok(validateMihomo(parse(mihomo.body)));
    assert.deepEqual(
      proxies.map((p) => p.network),
      targets.map((t) => (t.transport.type === "httpupgrade" ? "ws" : t.transport.type)),
    );
    for (const proxy of proxies.filter((p) => p.network === "ws")) {
      assert.equal((proxy["ws-opts"] as { "v2ray-http-upgrade"?: boolean })["v2ray-http-upgrade"], true);
    }
    const outbounds = (
      JSON.parse(singbox.body) as { outbounds: { tag: string; transport?: { type: string } }[] }
    ).outbounds;
    for (const target of targets) {
      const outbound = outbounds.find((o) => o.tag === target.remark);
      assert.equal(outbound?.transport?.type, target.transport.type, target.remark);
    }
  });
});
