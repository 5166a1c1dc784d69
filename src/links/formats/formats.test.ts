// Every protocol × transport × security a share link can carry, rendered in every format: mihomo
// documents validate against the meta-json-schema package's schema, sing-box documents against the
// repo's schema of sing-box 1.12 (singbox-schema.ts), Xray JSON is one complete config per entry;
// what a format cannot express is left out and said, and no group names a proxy that is not there.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parse } from "yaml";
import { validateMihomo, validateSingbox } from "../../../test/support/format-schemas.ts";
import type { LinkTarget, Security, Transport } from "../types.ts";
import { NIL_UUID, type SubscriptionEntry } from "./entries.ts";
import { renderPlainLinks } from "./links.ts";
import { DEFAULT_MIHOMO_BASE, renderMihomo } from "./mihomo.ts";
import { DEFAULT_SINGBOX_BASE, renderSingbox } from "./singbox.ts";
import { singboxDanglingTags } from "./singbox-schema.ts";
import { renderXrayJson } from "./xray-json.ts";

const UUID = "0f1e2d3c-4b5a-4697-8877-66554433aa11";
const TRANSPORTS: Transport[] = [
  { type: "tcp" },
  { type: "tcp", http: { host: ["cdn.example.com"], path: ["/p"] } },
  { type: "ws", path: "/ws?ed=2048", host: "cdn.example.com" },
  { type: "httpupgrade", path: "/up", host: "cdn.example.com" },
  { type: "grpc", serviceName: "svc", mode: "gun" },
  { type: "grpc", serviceName: "svc", mode: "multi", authority: "cdn.example.com" },
];
const SECURITIES: Security[] = [
  { type: "none" },
  { type: "tls", sni: "cdn.example.com", alpn: ["h2", "http/1.1"], fingerprint: "chrome" },
  { type: "tls", sni: "cdn.example.com", allowInsecure: true },
  {
    type: "reality",
    sni: "www.microsoft.com",
    publicKey: "q6sV8nM1oQe8gxRtgnxn6jx1yL7JXkJ6m_9zq1ZX8gU",
    shortId: "6ba85179",
    fingerprint: "firefox",
  },
];

/** Every combination the link builders accept (REALITY only for VLESS over TCP/gRPC). */
function allTargets(): LinkTarget[] {
  const out: LinkTarget[] = [];
  const endpoint = (remark: string) => ({ host: "fra1.vpn.example.net", port: 443, remark });
  for (const transport of TRANSPORTS) {
    for (const security of SECURITIES) {
      const name = `${transport.type}${transport.type === "tcp" && transport.http ? "+http" : ""}${transport.type === "grpc" && transport.authority ? "+authority" : ""} ${security.type}`;
      const reality = security.type === "reality";
      if (!reality || transport.type === "tcp" || transport.type === "grpc") {
        out.push({
          protocol: "vless",
          ...endpoint(`VLESS ${name}`),
          credential: { id: UUID, encryption: "none", flow: "xtls-rprx-vision" },
          transport,
          security,
        });
      }
      if (reality) continue;
      out.push({
        protocol: "vmess",
        ...endpoint(`VMess ${name}`),
        credential: { id: UUID, cipher: "aes-128-gcm" },
        transport,
        security,
      });
      out.push({
        protocol: "trojan",
        ...endpoint(`Trojan ${name}`),
        credential: { password: "pA55-w0rd_x" },
        transport,
        security,
      });
    }
  }
  for (const method of ["aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"] as const) {
    out.push({
      protocol: "shadowsocks",
      ...endpoint(`SS ${method}`),
      credential: { method, password: "secret" },
    });
  }
  out.push({
    protocol: "shadowsocks",
    ...endpoint("SS 2022"),
    credential: {
      method: "2022-blake3-aes-128-gcm",
      password: "c2VydmVyS2V5MTIzNDU2Nw==:dXNlcktleTEyMzQ1Njc4OQ==",
    },
  });
  out.push({
    protocol: "vless",
    ...endpoint("VLESS Encryption"),
    credential: { id: UUID, encryption: "mlkem768x25519plus.native.0rtt.key" },
    transport: { type: "tcp" },
    security: { type: "none" },
  });
  return out;
}

const ENTRIES: SubscriptionEntry[] = allTargets().map((target) => ({ kind: "link", target }));
const mihomoBase = parse(DEFAULT_MIHOMO_BASE) as Record<string, never>;

describe("mihomo", () => {
  const rendered = renderMihomo(ENTRIES, mihomoBase);
  const doc = parse(rendered.body) as {
    proxies: { name: string; type: string }[];
    "proxy-groups": { proxies: string[] }[];
  };

  test("the document validates against meta-json-schema", () => {
    assert.ok(validateMihomo(doc), JSON.stringify(validateMihomo.errors?.slice(0, 3)));
  });

  test("the schema has teeth: an unknown proxy type, port out of range, unknown network fail it", () => {
    const broken = structuredClone(doc);
    (broken.proxies[0] as Record<string, unknown>).type = "vlessx";
    assert.equal(validateMihomo(broken), false);
    const wrongPort = structuredClone(doc);
    (wrongPort.proxies[1] as Record<string, unknown>).port = 99999;
    assert.equal(validateMihomo(wrongPort), false);
    const wrongNetwork = structuredClone(doc);
    (wrongNetwork.proxies[2] as Record<string, unknown>).network = "carrier-pigeon";
    assert.equal(validateMihomo(wrongNetwork), false);
  });

  test("what mihomo cannot express is left out and listed at the top; everything else is in", () => {
    const reasons = new Map(rendered.leftOut.map((item) => [item.name, item.reason]));
    assert.match(reasons.get("Trojan tcp none") ?? "", /TLS/);
    assert.match(reasons.get("Trojan tcp+http tls") ?? "", /HTTP header/);
    assert.match(reasons.get("VLESS grpc+authority tls") ?? "", /authority/);
    assert.match(reasons.get("VLESS Encryption") ?? "", /Encryption/);
    for (const item of rendered.leftOut)
      assert.ok(rendered.body.includes(`# left out: ${item.name}:`), item.name);
    assert.equal(doc.proxies.length + rendered.leftOut.length, ENTRIES.length);
    const types = new Set(doc.proxies.map((p) => p.type));
    assert.deepEqual([...types].sort(), ["ss", "trojan", "vless", "vmess"]);
  });

  test("groups name exactly the proxies there are", () => {
    const names = doc.proxies.map((p) => p.name);
    assert.equal(new Set(names).size, names.length);
    const [select, auto] = doc["proxy-groups"];
    assert.deepEqual(select?.proxies, ["Auto", ...names]);
    assert.deepEqual(auto?.proxies, names);
  });

  test("no entries, or none mihomo can use: one placeholder, so groups are never empty", () => {
    for (const entries of [
      [],
      ENTRIES.filter((e) => e.kind === "link" && e.target.remark === "Trojan tcp none"),
    ]) {
      const one = parse(renderMihomo(entries, mihomoBase).body) as typeof doc;
      assert.ok(validateMihomo(one));
      assert.equal(one.proxies.length, 1);
      assert.match(one.proxies[0]?.name ?? "", /no configurations/);
      assert.deepEqual(one["proxy-groups"][1]?.proxies, [one.proxies[0]?.name]);
    }
  });

  test("a placeholder's name says why, and it points nowhere", () => {
    const one = parse(
      renderMihomo([{ kind: "placeholder", text: "expired 2026-11-01" }], mihomoBase).body,
    ) as {
      proxies: Record<string, unknown>[];
    };
    assert.deepEqual(
      [one.proxies[0]?.name, one.proxies[0]?.server, one.proxies[0]?.port, one.proxies[0]?.uuid],
      ["expired 2026-11-01", "0.0.0.0", 1, NIL_UUID],
    );
  });
});

describe("sing-box", () => {
  const rendered = renderSingbox(ENTRIES, DEFAULT_SINGBOX_BASE);
  const doc = JSON.parse(rendered.body) as {
    outbounds: { type: string; tag: string; outbounds?: string[] }[];
  };

  test("the document validates against the sing-box 1.12 schema and names no missing tag", () => {
    assert.ok(validateSingbox(doc), JSON.stringify(validateSingbox.errors?.slice(0, 3)));
    assert.deepEqual(singboxDanglingTags(doc), []);
  });

  test("the schema has teeth: legacy outbounds and DNS servers, unknown keys and fingerprints fail it", () => {
    // biome-ignore lint/suspicious/noExplicitAny: breaking a parsed document in place
    type Doc = Record<string, any>;
    const cases: [string, (d: Doc) => void][] = [
      ["block outbound", (d) => (d.outbounds as unknown[]).push({ type: "block", tag: "block" })],
      [
        "legacy DNS server",
        (d) => ((d.dns as { servers: unknown[] }).servers[0] = { tag: "x", address: "tls://1.1.1.1" }),
      ],
      [
        "unknown key",
        (d) => (((d.outbounds as Record<string, unknown>[])[3] as Record<string, unknown>).uuidd = "x"),
      ],
      [
        "bad fingerprint",
        (d) =>
          (d.outbounds as Record<string, unknown>[]).push({
            type: "vless",
            tag: "t",
            server: "s",
            server_port: 1,
            uuid: UUID,
            tls: { enabled: true, utls: { enabled: true, fingerprint: "netscape" } },
          }),
      ],
      [
        "geosite rule",
        (d) => (d.route as { rules: unknown[] }).rules.push({ geosite: ["cn"], outbound: "direct" }),
      ],
    ];
    for (const [what, breakIt] of cases) {
      const broken = structuredClone(doc) as unknown as Doc;
      breakIt(broken);
      assert.equal(validateSingbox(broken), false, what);
    }
  });

  test("no deprecated special outbounds; rule actions; a selector and a urltest over every outbound", () => {
    const types = doc.outbounds.map((o) => o.type);
    assert.ok(!types.includes("block") && !types.includes("dns"));
    const proxies = doc.outbounds
      .filter((o) => !["selector", "urltest", "direct"].includes(o.type))
      .map((o) => o.tag);
    assert.deepEqual(doc.outbounds.find((o) => o.type === "selector")?.outbounds, ["Auto", ...proxies]);
    assert.deepEqual(doc.outbounds.find((o) => o.type === "urltest")?.outbounds, proxies);
    assert.equal(proxies.length + rendered.leftOut.length, ENTRIES.length);
    const reasons = new Map(rendered.leftOut.map((item) => [item.name, item.reason]));
    assert.match(reasons.get("VMess tcp+http tls") ?? "", /HTTP header/);
    assert.match(reasons.get("VLESS grpc+authority none") ?? "", /authority/);
    assert.ok(!reasons.has("Trojan tcp none"), "sing-box trojan may go without TLS");
  });

  test("no entries: one placeholder outbound, groups still valid", () => {
    const one = JSON.parse(renderSingbox([], DEFAULT_SINGBOX_BASE).body) as typeof doc;
    assert.ok(validateSingbox(one));
    assert.equal(one.outbounds.at(-1)?.tag, "no configurations");
  });
});

describe("xray-json", () => {
  test("one complete config per entry, with its remarks and the entry as the first outbound", () => {
    const configs = JSON.parse(renderXrayJson(ENTRIES).body) as {
      remarks: string;
      inbounds: unknown[];
      outbounds: { tag: string; protocol: string }[];
    }[];
    assert.equal(configs.length, ENTRIES.length);
    const remarks = configs.map((c) => c.remarks);
    assert.equal(new Set(remarks).size, remarks.length);
    for (const config of configs) {
      assert.equal(config.outbounds[0]?.tag, "proxy");
      assert.deepEqual(
        config.outbounds.slice(1).map((o) => o.protocol),
        ["freedom", "blackhole"],
      );
    }
  });
});

describe("links", () => {
  test("the share links as plain text, one per line; a placeholder is a link too", () => {
    const body = renderPlainLinks([...ENTRIES.slice(0, 2), { kind: "placeholder", text: "disabled" }]).body;
    const lines = body.split("\n");
    assert.equal(lines.length, 3);
    assert.match(
      lines[2] ?? "",
      /^vless:\/\/00000000-0000-0000-0000-000000000000@0\.0\.0\.0:1\?.*#disabled$/,
    );
    assert.equal(renderPlainLinks([]).body, "# no configurations");
  });
});

describe("a host's mux, fragment and noise (the entry's dialer)", () => {
  const dialer = {
    mux: { concurrency: 4 },
    fragment: { packets: "1-3", length: "5-9", interval: "1" },
    noise: [{ type: "str" as const, packet: "hello", delay: "5" }],
  };
  const withDialer: SubscriptionEntry[] = ENTRIES.map((entry) =>
    entry.kind === "link" ? { kind: "link", target: { ...entry.target, dialer } } : entry,
  );
  type Outbound = {
    tag: string;
    protocol: string;
    mux?: unknown;
    settings: { vnext?: { users: { flow?: string }[] }[] } & Record<string, unknown>;
    streamSettings?: { sockopt?: { dialerProxy?: string } };
  };

  test("xray-json: mux on every outbound but VLESS Vision's, every outbound dials through the fragment freedom", () => {
    const configs = JSON.parse(renderXrayJson(withDialer).body) as { outbounds: Outbound[] }[];
    assert.equal(configs.length, ENTRIES.length);
    for (const config of configs) {
      const [proxy] = config.outbounds;
      assert.ok(proxy);
      const vision = proxy.settings.vnext?.[0]?.users[0]?.flow !== undefined;
      assert.deepEqual(proxy.mux, vision ? undefined : { enabled: true, concurrency: 4 });
      assert.equal(proxy.streamSettings?.sockopt?.dialerProxy, "fragment");
      const fragment = config.outbounds.filter((o) => o.tag === "fragment");
      assert.equal(fragment.length, 1);
      assert.deepEqual(fragment[0]?.settings, { fragment: dialer.fragment, noises: dialer.noise });
      assert.deepEqual(
        config.outbounds.map((o) => o.tag),
        ["proxy", "direct", "block", "fragment"],
      );
    }
    assert.ok(configs.some((c) => c.outbounds[0]?.settings.vnext?.[0]?.users[0]?.flow !== undefined));
  });

  test("sing-box: TLS entries fragment (its own algorithm), others unchanged; mihomo and links unchanged", () => {
    const doc = JSON.parse(renderSingbox(withDialer, DEFAULT_SINGBOX_BASE).body) as {
      outbounds: { tls?: { fragment?: boolean; reality?: unknown } }[];
    };
    assert.ok(validateSingbox(doc), JSON.stringify(validateSingbox.errors));
    const plain = JSON.parse(renderSingbox(ENTRIES, DEFAULT_SINGBOX_BASE).body) as typeof doc;
    assert.equal(doc.outbounds.length, plain.outbounds.length);
    let fragmented = 0;
    for (const [i, outbound] of doc.outbounds.entries()) {
      const tls = outbound.tls !== undefined && outbound.tls.reality === undefined;
      assert.equal(outbound.tls?.fragment === true, tls, JSON.stringify(outbound));
      if (tls) fragmented++;
      const { fragment: _f, ...rest } = outbound.tls ?? {};
      assert.deepEqual(outbound.tls === undefined ? undefined : rest, plain.outbounds[i]?.tls);
    }
    assert.ok(fragmented > 0);
    assert.equal(renderMihomo(withDialer, mihomoBase).body, renderMihomo(ENTRIES, mihomoBase).body);
    assert.equal(renderPlainLinks(withDialer).body, renderPlainLinks(ENTRIES).body);
  });
});
