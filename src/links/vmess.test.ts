// Golden vmess:// links (v2rayN "ver 2" JSON, share-links.md §2a). Each vector states the exact
// JSON text; the link must be vmess:// + its standard base64, and decode back to the target.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeLink, escapingProblems } from "../../test/support/link-decoder.ts";
import type { VmessTarget } from "./types.ts";
import { InvalidLinkTargetError } from "./uri.ts";
import { buildVmessLink } from "./vmess.ts";

const ID = "b831381d-6324-4d53-ad4f-8cda48b30811";
const credential = { id: ID, cipher: "aes-128-gcm" } as const;
const at = { host: "vpn.example.com", port: 443 };
const head = (ps: string, add = "vpn.example.com", port = "443", scy = "aes-128-gcm") =>
  `{"v":"2","ps":"${ps}","add":"${add}","port":"${port}","id":"${ID}","aid":"0","scy":"${scy}"`;
const NO_TLS = `"tls":"","sni":"","alpn":"","fp":""}`;

const VECTORS: { name: string; target: VmessTarget; json: string }[] = [
  {
    name: "tcp, no security",
    target: {
      protocol: "vmess",
      ...at,
      remark: "DE tcp",
      credential,
      transport: { type: "tcp" },
      security: { type: "none" },
    },
    json: `${head("DE tcp")},"net":"tcp","type":"none","host":"","path":"",${NO_TLS}`,
  },
  {
    name: "tcp with http header, chacha20",
    target: {
      protocol: "vmess",
      ...at,
      port: 80,
      remark: "a+b = c & d",
      credential: { id: ID, cipher: "chacha20-poly1305" },
      transport: { type: "tcp", http: { host: ["a.example.com", "b.example.com"], path: ["/x"] } },
      security: { type: "none" },
    },
    json:
      `${head("a+b = c & d", "vpn.example.com", "80", "chacha20-poly1305")},"net":"tcp","type":"http",` +
      `"host":"a.example.com,b.example.com","path":"/x",${NO_TLS}`,
  },
  {
    name: "tcp + tls on a bare IPv6 address",
    target: {
      protocol: "vmess",
      host: "2001:db8::1",
      port: 8443,
      remark: "v6",
      credential: { id: ID, cipher: "aes-128-gcm" },
      transport: { type: "tcp" },
      security: { type: "tls", sni: "vpn.example.com", alpn: ["h2", "http/1.1"], fingerprint: "chrome" },
    },
    json:
      `${head("v6", "2001:db8::1", "8443", "aes-128-gcm")},"net":"tcp","type":"none","host":"","path":"",` +
      `"tls":"tls","sni":"vpn.example.com","alpn":"h2,http/1.1","fp":"chrome"}`,
  },
  {
    name: "tcp with http header + tls",
    target: {
      protocol: "vmess",
      ...at,
      remark: "http tls",
      credential,
      transport: { type: "tcp", http: { path: ["/a", "/b"] } },
      security: { type: "tls", sni: "vpn.example.com" },
    },
    json: `${head("http tls")},"net":"tcp","type":"http","host":"","path":"/a,/b","tls":"tls","sni":"vpn.example.com","alpn":"","fp":""}`,
  },
  {
    name: "ws, no security",
    target: {
      protocol: "vmess",
      ...at,
      port: 8080,
      remark: "ws",
      credential,
      transport: { type: "ws", path: "/vmws?ed=2048", host: "cdn.example.com" },
      security: { type: "none" },
    },
    json: `${head("ws", "vpn.example.com", "8080")},"net":"ws","type":"none","host":"cdn.example.com","path":"/vmws?ed=2048",${NO_TLS}`,
  },
  {
    name: "ws + tls, insecure, unicode remark",
    target: {
      protocol: "vmess",
      ...at,
      remark: '🇩🇪 Frankfurt "1"',
      credential,
      transport: { type: "ws", path: "/vmwst" },
      security: { type: "tls", sni: "localhost", allowInsecure: true },
    },
    json:
      `${head('🇩🇪 Frankfurt \\"1\\"')},"net":"ws","type":"none","host":"","path":"/vmwst",` +
      `"tls":"tls","sni":"localhost","alpn":"","fp":"","insecure":"1"}`,
  },
  {
    name: "grpc, no security: serviceName in path",
    target: {
      protocol: "vmess",
      ...at,
      remark: "grpc",
      credential,
      transport: { type: "grpc", serviceName: "grpc.Service", mode: "gun" },
      security: { type: "none" },
    },
    json: `${head("grpc")},"net":"grpc","type":"gun","host":"","path":"grpc.Service",${NO_TLS}`,
  },
  {
    name: "grpc multi + tls: authority in host",
    target: {
      protocol: "vmess",
      ...at,
      remark: "grpc tls",
      credential,
      transport: { type: "grpc", serviceName: "gs", mode: "multi", authority: "cdn.example.com" },
      security: { type: "tls", sni: "cdn.example.com", alpn: ["h2"], fingerprint: "ios" },
    },
    json:
      `${head("grpc tls")},"net":"grpc","type":"multi","host":"cdn.example.com","path":"gs",` +
      `"tls":"tls","sni":"cdn.example.com","alpn":"h2","fp":"ios"}`,
  },
  {
    name: "httpupgrade, no security",
    target: {
      protocol: "vmess",
      ...at,
      remark: "hu",
      credential,
      transport: { type: "httpupgrade", path: "/hu", host: "cdn.example.com" },
      security: { type: "none" },
    },
    json: `${head("hu")},"net":"httpupgrade","type":"none","host":"cdn.example.com","path":"/hu",${NO_TLS}`,
  },
  {
    name: "httpupgrade + tls",
    target: {
      protocol: "vmess",
      ...at,
      remark: "hu tls",
      credential,
      transport: { type: "httpupgrade", path: "/" },
      security: { type: "tls", fingerprint: "edge" },
    },
    json: `${head("hu tls")},"net":"httpupgrade","type":"none","host":"","path":"/","tls":"tls","sni":"","alpn":"","fp":"edge"}`,
  },
];

for (const vector of VECTORS) {
  test(`vmess golden: ${vector.name}`, () => {
    const link = buildVmessLink(vector.target);
    assert.equal(link, `vmess://${Buffer.from(vector.json, "utf8").toString("base64")}`);
    assert.deepEqual(escapingProblems(link), []);
    assert.deepEqual(decodeLink(link), vector.target);
  });
}

test("vmess is one line of standard base64: + and / appear, - and _ never do", () => {
  // "??>" and "~~~" in a remark force the 62nd and 63rd base64 characters somewhere in the payload.
  const target = VECTORS[0]?.target ?? assert.fail("no vectors");
  const link = buildVmessLink({ ...target, remark: "??>>~~~ÿÿ" });
  assert.match(link, /^vmess:\/\/[A-Za-z0-9+/]+=*$/);
  assert.match(link.slice(8), /[+/]/);
});

test("a vmess target that cannot be shared is refused", () => {
  const target = VECTORS[0]?.target ?? assert.fail("no vectors");
  assert.throws(() => buildVmessLink({ ...target, port: 70000 }), InvalidLinkTargetError);
  assert.throws(() => buildVmessLink({ ...target, host: "bad host" }), InvalidLinkTargetError);
});
