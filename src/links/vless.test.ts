// Golden vless:// links, written by hand from share-links.md §0–1 (the last REALITY vector is the
// reference's own example), then read back by the independent decoder in test/support.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeLink, escapingProblems } from "../../test/support/link-decoder.ts";
import type { VlessTarget } from "./types.ts";
import { InvalidLinkTargetError } from "./uri.ts";
import { buildVlessLink } from "./vless.ts";

const ID = "b831381d-6324-4d53-ad4f-8cda48b30811";
const PBK = "Z84J2IelR9ch3k8VtlVhhs5ycBUlXA7wHBWcBrjqnAw";
const credential = { id: ID, encryption: "none" };
const vision = { id: ID, encryption: "none", flow: "xtls-rprx-vision" } as const;
const at = { host: "vpn.example.com", port: 443 };

const VECTORS: { name: string; target: VlessTarget; link: string }[] = [
  {
    name: "tcp, no security",
    target: {
      protocol: "vless",
      ...at,
      remark: "DE tcp",
      credential,
      transport: { type: "tcp" },
      security: { type: "none" },
    },
    link: `vless://${ID}@vpn.example.com:443?encryption=none&security=none&type=tcp&headerType=none#DE%20tcp`,
  },
  {
    name: "tcp with http header, lists comma-joined and escaped",
    target: {
      protocol: "vless",
      ...at,
      port: 80,
      remark: "tcp+http = obfs & more",
      credential,
      transport: { type: "tcp", http: { host: ["a.example.com", "b.example.com"], path: ["/", "/x?y=1"] } },
      security: { type: "none" },
    },
    link:
      `vless://${ID}@vpn.example.com:80?encryption=none&security=none&type=tcp&headerType=http` +
      "&host=a.example.com%2Cb.example.com&path=%2F%2C%2Fx%3Fy%3D1#tcp%2Bhttp%20%3D%20obfs%20%26%20more",
  },
  {
    name: "tcp + tls + vision on an IPv6 host",
    target: {
      protocol: "vless",
      host: "2001:db8::1",
      port: 8443,
      remark: "IPv6 TLS",
      credential: vision,
      transport: { type: "tcp" },
      security: { type: "tls", sni: "vpn.example.com", alpn: ["h2", "http/1.1"], fingerprint: "chrome" },
    },
    link:
      `vless://${ID}@[2001:db8::1]:8443?encryption=none&security=tls&type=tcp&headerType=none` +
      "&flow=xtls-rprx-vision&sni=vpn.example.com&fp=chrome&alpn=h2%2Chttp%2F1.1#IPv6%20TLS",
  },
  {
    name: "tcp with http header + tls (no vision there)",
    target: {
      protocol: "vless",
      ...at,
      remark: "http-tls",
      credential,
      transport: { type: "tcp", http: { host: ["vpn.example.com"] } },
      security: { type: "tls" },
    },
    link: `vless://${ID}@vpn.example.com:443?encryption=none&security=tls&type=tcp&headerType=http&host=vpn.example.com#http-tls`,
  },
  {
    name: "ws with early data in the path",
    target: {
      protocol: "vless",
      ...at,
      port: 8080,
      remark: "ws",
      credential,
      transport: { type: "ws", path: "/ws?ed=2048", host: "cdn.example.com" },
      security: { type: "none" },
    },
    link: `vless://${ID}@vpn.example.com:8080?encryption=none&security=none&type=ws&host=cdn.example.com&path=%2Fws%3Fed%3D2048#ws`,
  },
  {
    name: "ws + tls, insecure (both spellings)",
    target: {
      protocol: "vless",
      ...at,
      remark: "Москва №1 🚀",
      credential,
      transport: { type: "ws", path: "/vl", host: "cdn.example.com" },
      security: { type: "tls", sni: "cdn.example.com", fingerprint: "firefox", allowInsecure: true },
    },
    link:
      `vless://${ID}@vpn.example.com:443?encryption=none&security=tls&type=ws&host=cdn.example.com&path=%2Fvl` +
      "&sni=cdn.example.com&fp=firefox&allowInsecure=1&insecure=1" +
      "#%D0%9C%D0%BE%D1%81%D0%BA%D0%B2%D0%B0%20%E2%84%961%20%F0%9F%9A%80",
  },
  {
    name: "grpc, no security",
    target: {
      protocol: "vless",
      ...at,
      remark: "grpc",
      credential,
      transport: { type: "grpc", serviceName: "grpc.Service", mode: "gun" },
      security: { type: "none" },
    },
    link: `vless://${ID}@vpn.example.com:443?encryption=none&security=none&type=grpc&serviceName=grpc.Service&mode=gun#grpc`,
  },
  {
    name: "grpc multi + tls, empty authority kept",
    target: {
      protocol: "vless",
      ...at,
      remark: "a=b&c",
      credential,
      transport: { type: "grpc", serviceName: "my svc/x", mode: "multi", authority: "" },
      security: { type: "tls", sni: "vpn.example.com", alpn: ["h2"] },
    },
    link:
      `vless://${ID}@vpn.example.com:443?encryption=none&security=tls&type=grpc&serviceName=my%20svc%2Fx` +
      "&mode=multi&authority=&sni=vpn.example.com&alpn=h2#a%3Db%26c",
  },
  {
    name: "grpc + reality with an empty shortId",
    target: {
      protocol: "vless",
      host: "203.0.113.7",
      port: 443,
      remark: "reality grpc",
      credential,
      transport: { type: "grpc", serviceName: "gs", mode: "gun" },
      security: {
        type: "reality",
        sni: "www.microsoft.com",
        publicKey: PBK,
        shortId: "",
        fingerprint: "random",
      },
    },
    link:
      `vless://${ID}@203.0.113.7:443?encryption=none&security=reality&type=grpc&serviceName=gs&mode=gun` +
      `&sni=www.microsoft.com&fp=random&pbk=${PBK}&sid=#reality%20grpc`,
  },
  {
    name: "httpupgrade, no security, no host",
    target: {
      protocol: "vless",
      ...at,
      port: 2052,
      remark: "hu",
      credential: { id: ID, encryption: "mlkem768x25519plus.native.0rtt.abc" },
      transport: { type: "httpupgrade", path: "/hu" },
      security: { type: "none" },
    },
    link: `vless://${ID}@vpn.example.com:2052?encryption=mlkem768x25519plus.native.0rtt.abc&security=none&type=httpupgrade&path=%2Fhu#hu`,
  },
  {
    name: "httpupgrade + tls",
    target: {
      protocol: "vless",
      ...at,
      remark: "hu tls",
      credential,
      transport: { type: "httpupgrade", path: "/hu", host: "cdn.example.com" },
      security: { type: "tls", sni: "cdn.example.com", alpn: ["http/1.1"], fingerprint: "safari" },
    },
    link:
      `vless://${ID}@vpn.example.com:443?encryption=none&security=tls&type=httpupgrade&host=cdn.example.com&path=%2Fhu` +
      "&sni=cdn.example.com&fp=safari&alpn=http%2F1.1#hu%20tls",
  },
  {
    name: "tcp + reality + vision: the reference's example",
    target: {
      protocol: "vless",
      host: "2001:db8::1",
      port: 443,
      remark: "🇩🇪 DE",
      credential: vision,
      transport: { type: "tcp" },
      security: {
        type: "reality",
        sni: "www.example.com",
        fingerprint: "chrome",
        publicKey: PBK,
        shortId: "0123abcd",
        spiderX: "/",
      },
    },
    link:
      `vless://${ID}@[2001:db8::1]:443?encryption=none&security=reality&type=tcp&headerType=none&flow=xtls-rprx-vision` +
      `&sni=www.example.com&fp=chrome&pbk=${PBK}&sid=0123abcd&spx=%2F#%F0%9F%87%A9%F0%9F%87%AA%20DE`,
  },
];

for (const vector of VECTORS) {
  test(`vless golden: ${vector.name}`, () => {
    assert.equal(buildVlessLink(vector.target), vector.link);
    assert.deepEqual(escapingProblems(vector.link), []);
    assert.deepEqual(decodeLink(vector.link), vector.target);
  });
}

const plain: VlessTarget = VECTORS[0]?.target ?? assert.fail("no vectors");

test("flow is left out where Vision cannot run (ws, http header, no security)", () => {
  const ws = { ...plain, credential: vision, transport: { type: "ws", path: "/" } } as const;
  const withHeader = {
    ...plain,
    credential: vision,
    security: { type: "tls" },
    transport: { type: "tcp", http: {} },
  } as const;
  const insecureTcp = { ...plain, credential: vision };
  for (const target of [ws, withHeader, insecureTcp]) assert.doesNotMatch(buildVlessLink(target), /flow=/);
});

test("unicode domains are written in punycode", () => {
  const link = buildVlessLink({ ...plain, host: "Bücher.example" });
  assert.match(link, /@xn--bcher-kva\.example:443\?/);
  assert.equal(decodeLink(link).host, "xn--bcher-kva.example");
});

test("a bracketed IPv6 host is accepted and written once in brackets", () => {
  assert.match(buildVlessLink({ ...plain, host: "[2001:DB8::2]" }), /@\[2001:db8::2\]:443\?/);
});

test("targets no client could read back are refused", () => {
  const reality = {
    type: "reality",
    sni: "a.example",
    publicKey: PBK,
    shortId: "ab",
    fingerprint: "chrome",
  } as const;
  const bad: VlessTarget[] = [
    { ...plain, host: "a/b.example" },
    { ...plain, host: "" },
    { ...plain, host: "fe80::1%eth0" },
    { ...plain, port: 0 },
    { ...plain, port: 65536 },
    { ...plain, port: 443.5 },
    { ...plain, credential: { id: ID, encryption: "" } },
    { ...plain, transport: { type: "ws" }, security: reality },
    { ...plain, security: { ...reality, publicKey: "short" } },
    { ...plain, security: { ...reality, shortId: "abc" } },
    { ...plain, security: { ...reality, shortId: "0123456789abcdef01" } },
    { ...plain, transport: { type: "grpc", serviceName: "", mode: "gun" } },
    { ...plain, security: { type: "tls", alpn: ["h2,http/1.1"] } },
  ];
  for (const target of bad)
    assert.throws(() => buildVlessLink(target), InvalidLinkTargetError, JSON.stringify(target));
});
