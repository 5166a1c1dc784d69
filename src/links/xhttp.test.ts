// Golden XHTTP share links, written by hand in the form v2rayN and the XTLS proposal use
// (`type=xhttp&host=…&path=…&mode=…&extra=<compact JSON>`), read back to the same fields by the
// independent decoder; VMess's ver-2 JSON carries the mode in `type` and has no key for extra.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeLink, escapingProblems } from "../../test/support/link-decoder.ts";
import { buildTrojanLink } from "./trojan.ts";
import type { LinkTarget, XhttpTransport } from "./types.ts";
import { InvalidLinkTargetError } from "./uri.ts";
import { buildVlessLink } from "./vless.ts";
import { buildVmessLink } from "./vmess.ts";

const ID = "b831381d-6324-4d53-ad4f-8cda48b30811";
const PBK = "Z84J2IelR9ch3k8VtlVhhs5ycBUlXA7wHBWcBrjqnAw";
const at = { host: "vpn.example.com", port: 443 };
const XHTTP: XhttpTransport = {
  type: "xhttp",
  path: "/xh",
  host: "cdn.example.com",
  mode: "packet-up",
  extra: {
    headers: { "X-A": "1 2" },
    xPaddingBytes: "100-1000",
    noGRPCHeader: true,
    xmux: { maxConcurrency: "16-32", hKeepAlivePeriod: -1 },
  },
};
// {"headers":{"X-A":"1 2"},"xPaddingBytes":"100-1000","noGRPCHeader":true,"xmux":{"maxConcurrency":"16-32","hKeepAlivePeriod":-1}}
const EXTRA =
  "%7B%22headers%22%3A%7B%22X-A%22%3A%221%202%22%7D%2C%22xPaddingBytes%22%3A%22100-1000%22%2C" +
  "%22noGRPCHeader%22%3Atrue%2C%22xmux%22%3A%7B%22maxConcurrency%22%3A%2216-32%22%2C%22hKeepAlivePeriod%22%3A-1%7D%7D";

const VECTORS: { name: string; target: LinkTarget; link: string; build: (t: never) => string }[] = [
  {
    name: "VLESS, TLS, every client setting in extra",
    target: {
      protocol: "vless",
      ...at,
      remark: "XH tls",
      credential: { id: ID, encryption: "none" },
      transport: XHTTP,
      security: { type: "tls", sni: "cdn.example.com", fingerprint: "chrome", alpn: ["h2"] },
    },
    link:
      `vless://${ID}@vpn.example.com:443?encryption=none&security=tls&type=xhttp&host=cdn.example.com` +
      `&path=%2Fxh&mode=packet-up&extra=${EXTRA}&sni=cdn.example.com&fp=chrome&alpn=h2#XH%20tls`,
    build: buildVlessLink,
  },
  {
    name: "VLESS, REALITY, stream-one, no extra",
    target: {
      protocol: "vless",
      ...at,
      remark: "XH reality",
      credential: { id: ID, encryption: "none" },
      transport: { type: "xhttp", path: "/", mode: "stream-one" },
      security: {
        type: "reality",
        sni: "www.example.com",
        publicKey: PBK,
        shortId: "0123abcd",
        fingerprint: "chrome",
      },
    },
    link:
      `vless://${ID}@vpn.example.com:443?encryption=none&security=reality&type=xhttp&path=%2F&mode=stream-one` +
      `&sni=www.example.com&fp=chrome&pbk=${PBK}&sid=0123abcd#XH%20reality`,
    build: buildVlessLink,
  },
  {
    name: "Trojan, TLS, mode auto",
    target: {
      protocol: "trojan",
      ...at,
      remark: "XH trojan",
      credential: { password: "pw" },
      transport: { type: "xhttp", path: "/t", mode: "auto" },
      security: { type: "tls", sni: "vpn.example.com" },
    },
    link: "trojan://pw@vpn.example.com:443?security=tls&type=xhttp&path=%2Ft&mode=auto&sni=vpn.example.com#XH%20trojan",
    build: buildTrojanLink,
  },
];

for (const vector of VECTORS) {
  test(`xhttp golden: ${vector.name}`, () => {
    const link = vector.build(vector.target as never);
    assert.equal(link, vector.link);
    assert.deepEqual(escapingProblems(link), []);
    assert.deepEqual(decodeLink(link), vector.target);
  });
}

test("VMess: net xhttp with the mode in type; extra has no key there, so such a target is refused", () => {
  const target: LinkTarget = {
    protocol: "vmess",
    ...at,
    remark: "XH vm",
    credential: { id: ID, cipher: "aes-128-gcm" },
    transport: { type: "xhttp", path: "/v", host: "cdn.example.com", mode: "stream-up" },
    security: { type: "tls", sni: "cdn.example.com" },
  };
  const link = buildVmessLink(target);
  const json = JSON.parse(Buffer.from(link.slice(8), "base64").toString("utf8")) as Record<string, string>;
  assert.deepEqual(
    [json.net, json.type, json.host, json.path, json.scy],
    ["xhttp", "stream-up", "cdn.example.com", "/v", "aes-128-gcm"],
  );
  assert.deepEqual(decodeLink(link), target);
  assert.throws(() => buildVmessLink({ ...target, transport: XHTTP }), InvalidLinkTargetError);
});

test("REALITY rides on xhttp but not on ws or httpupgrade", () => {
  const reality = {
    type: "reality",
    sni: "www.example.com",
    publicKey: PBK,
    shortId: "",
    fingerprint: "chrome",
  } as const;
  const target = {
    protocol: "vless",
    ...at,
    remark: "r",
    credential: { id: ID, encryption: "none" },
  } as const;
  assert.doesNotThrow(() => buildVlessLink({ ...target, transport: XHTTP, security: reality }));
  for (const type of ["ws", "httpupgrade"] as const) {
    assert.throws(
      () => buildVlessLink({ ...target, transport: { type }, security: reality }),
      InvalidLinkTargetError,
    );
  }
});
