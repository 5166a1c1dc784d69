// Golden trojan:// links (share-links.md §3), written by hand and read back by the independent decoder.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeLink, escapingProblems } from "../../test/support/link-decoder.ts";
import { buildTrojanLink } from "./trojan.ts";
import type { TrojanTarget } from "./types.ts";
import { InvalidLinkTargetError } from "./uri.ts";

const at = { host: "vpn.example.com", port: 443 };
const credential = { password: "trojan-pass-a" };

const VECTORS: { name: string; target: TrojanTarget; link: string }[] = [
  {
    name: "plain tcp says security=none (clients would assume tls)",
    target: {
      protocol: "trojan",
      ...at,
      port: 21104,
      remark: "plain",
      credential,
      transport: { type: "tcp" },
      security: { type: "none" },
    },
    link: "trojan://trojan-pass-a@vpn.example.com:21104?security=none&type=tcp&headerType=none#plain",
  },
  {
    name: "tcp + tls; : @ / + = % and space in the password are escaped",
    target: {
      protocol: "trojan",
      ...at,
      remark: "DE trojan",
      credential: { password: "p@ss:w/rd+=% x" },
      transport: { type: "tcp" },
      security: { type: "tls", sni: "vpn.example.com", alpn: ["h2", "http/1.1"], fingerprint: "chrome" },
    },
    link:
      "trojan://p%40ss%3Aw%2Frd%2B%3D%25%20x@vpn.example.com:443?security=tls&type=tcp&headerType=none" +
      "&sni=vpn.example.com&fp=chrome&alpn=h2%2Chttp%2F1.1#DE%20trojan",
  },
  {
    name: "tcp with http header, no security",
    target: {
      protocol: "trojan",
      ...at,
      port: 80,
      remark: "obfs",
      credential,
      transport: { type: "tcp", http: { host: ["a.example.com"], path: ["/p q"] } },
      security: { type: "none" },
    },
    link: "trojan://trojan-pass-a@vpn.example.com:80?security=none&type=tcp&headerType=http&host=a.example.com&path=%2Fp%20q#obfs",
  },
  {
    name: "tcp with http header + tls, insecure",
    target: {
      protocol: "trojan",
      ...at,
      remark: "obfs tls",
      credential,
      transport: { type: "tcp", http: {} },
      security: { type: "tls", allowInsecure: true },
    },
    link: "trojan://trojan-pass-a@vpn.example.com:443?security=tls&type=tcp&headerType=http&allowInsecure=1&insecure=1#obfs%20tls",
  },
  {
    name: "ws, no security, on an IPv6 host",
    target: {
      protocol: "trojan",
      host: "2001:db8::5",
      port: 8080,
      remark: "v6 ws",
      credential,
      transport: { type: "ws", path: "/tr" },
      security: { type: "none" },
    },
    link: "trojan://trojan-pass-a@[2001:db8::5]:8080?security=none&type=ws&path=%2Ftr#v6%20ws",
  },
  {
    name: "ws + tls",
    target: {
      protocol: "trojan",
      ...at,
      remark: "Москва №1 🚀",
      credential,
      transport: { type: "ws", path: "/tr?ed=2048", host: "cdn.example.com" },
      security: { type: "tls", sni: "cdn.example.com" },
    },
    link:
      "trojan://trojan-pass-a@vpn.example.com:443?security=tls&type=ws&host=cdn.example.com&path=%2Ftr%3Fed%3D2048" +
      "&sni=cdn.example.com#%D0%9C%D0%BE%D1%81%D0%BA%D0%B2%D0%B0%20%E2%84%961%20%F0%9F%9A%80",
  },
  {
    name: "grpc, no security",
    target: {
      protocol: "trojan",
      ...at,
      remark: "g",
      credential,
      transport: { type: "grpc", serviceName: "tr", mode: "gun" },
      security: { type: "none" },
    },
    link: "trojan://trojan-pass-a@vpn.example.com:443?security=none&type=grpc&serviceName=tr&mode=gun#g",
  },
  {
    name: "grpc + tls with authority",
    target: {
      protocol: "trojan",
      ...at,
      remark: "100% grpc",
      credential,
      transport: { type: "grpc", serviceName: "tr", mode: "multi", authority: "cdn.example.com" },
      security: { type: "tls", sni: "cdn.example.com", fingerprint: "android" },
    },
    link:
      "trojan://trojan-pass-a@vpn.example.com:443?security=tls&type=grpc&serviceName=tr&mode=multi" +
      "&authority=cdn.example.com&sni=cdn.example.com&fp=android#100%25%20grpc",
  },
  {
    name: "httpupgrade, no security",
    target: {
      protocol: "trojan",
      ...at,
      remark: "hu",
      credential,
      transport: { type: "httpupgrade", host: "cdn.example.com" },
      security: { type: "none" },
    },
    link: "trojan://trojan-pass-a@vpn.example.com:443?security=none&type=httpupgrade&host=cdn.example.com#hu",
  },
  {
    name: "httpupgrade + tls",
    target: {
      protocol: "trojan",
      ...at,
      remark: "hu tls",
      credential,
      transport: { type: "httpupgrade", path: "/hu", host: "cdn.example.com" },
      security: { type: "tls", sni: "cdn.example.com", alpn: ["http/1.1"] },
    },
    link:
      "trojan://trojan-pass-a@vpn.example.com:443?security=tls&type=httpupgrade&host=cdn.example.com&path=%2Fhu" +
      "&sni=cdn.example.com&alpn=http%2F1.1#hu%20tls",
  },
];

for (const vector of VECTORS) {
  test(`trojan golden: ${vector.name}`, () => {
    assert.equal(buildTrojanLink(vector.target), vector.link);
    assert.deepEqual(escapingProblems(vector.link), []);
    assert.deepEqual(decodeLink(vector.link), vector.target);
  });
}

test("an empty trojan password is refused", () => {
  const target = VECTORS[0]?.target ?? assert.fail("no vectors");
  assert.throws(() => buildTrojanLink({ ...target, credential: { password: "" } }), InvalidLinkTargetError);
});
