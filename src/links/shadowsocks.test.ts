// Golden ss:// links (SIP002, share-links.md §4). The first and the 2022 aes-256 vectors are the
// SIP002 document's own examples (without the plugin); the other base64url values were computed
// with Python's base64.urlsafe_b64encode, not with Node.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeLink, escapingProblems } from "../../test/support/link-decoder.ts";
import type { ShadowsocksMethod } from "../protocols/shadowsocks.ts";
import { buildShadowsocksLink } from "./shadowsocks.ts";
import type { ShadowsocksTarget } from "./types.ts";
import { InvalidLinkTargetError } from "./uri.ts";

const KEY16 = "+vv8/f7/AAECAwQFBgcICQ==";
const KEY16_ESCAPED = "%2Bvv8%2Ff7%2FAAECAwQFBgcICQ%3D%3D";
const KEY32 = "+/v7AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxw=";
const KEY32_ESCAPED = "%2B%2Fv7AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxw%3D";
const SIP002_KEY = "YctPZ6U7xPPcU+gp3u+0tx/tRizJN9K8y+uKlW2qjlI=";

function ss(
  method: ShadowsocksMethod,
  password: string,
  remark: string,
  host = "192.168.100.1",
): ShadowsocksTarget {
  return { protocol: "shadowsocks", host, port: 8888, remark, credential: { method, password } };
}

const VECTORS: { name: string; target: ShadowsocksTarget; link: string }[] = [
  {
    name: "aes-128-gcm (SIP002 Example1)",
    target: ss("aes-128-gcm", "test", "Example1"),
    link: "ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888#Example1",
  },
  {
    name: "aes-256-gcm, no padding",
    target: ss("aes-256-gcm", "ss-pass-aes256", "DE ss"),
    link: "ss://YWVzLTI1Ni1nY206c3MtcGFzcy1hZXMyNTY@192.168.100.1:8888#DE%20ss",
  },
  {
    name: "chacha20-poly1305 as chacha20-ietf-poly1305: URL-safe alphabet, password with : / + = ? ~ and unicode",
    target: ss("chacha20-poly1305", "p/a+s=s:w?rd~ünï", "a+b=c&d", "2001:db8::1"),
    link: "ss://Y2hhY2hhMjAtaWV0Zi1wb2x5MTMwNTpwL2Ercz1zOnc_cmR-w7xuw68@[2001:db8::1]:8888#a%2Bb%3Dc%26d",
  },
  {
    name: "aes-128-gcm whose base64 would hold + and / in the standard alphabet",
    target: ss("aes-128-gcm", ">>>???", "🚀"),
    link: "ss://YWVzLTEyOC1nY206Pj4-Pz8_@192.168.100.1:8888#%F0%9F%9A%80",
  },
  {
    name: "2022-blake3-aes-128-gcm: not base64, key escaped",
    target: ss("2022-blake3-aes-128-gcm", KEY16, "ss2022 128"),
    link: `ss://2022-blake3-aes-128-gcm:${KEY16_ESCAPED}@192.168.100.1:8888#ss2022%20128`,
  },
  {
    name: "2022-blake3-aes-256-gcm (SIP002 Example3 without its plugin)",
    target: ss("2022-blake3-aes-256-gcm", SIP002_KEY, "Example3"),
    link: "ss://2022-blake3-aes-256-gcm:YctPZ6U7xPPcU%2Bgp3u%2B0tx%2FtRizJN9K8y%2BuKlW2qjlI%3D@192.168.100.1:8888#Example3",
  },
  {
    name: "2022-blake3-aes-256-gcm on a host name",
    target: ss("2022-blake3-aes-256-gcm", KEY32, "aes 2022", "vpn.example.com"),
    link: `ss://2022-blake3-aes-256-gcm:${KEY32_ESCAPED}@vpn.example.com:8888#aes%202022`,
  },
  {
    name: "2022 multi-user: serverKey:userKey, the joining : escaped with the rest",
    target: ss("2022-blake3-aes-256-gcm", `${SIP002_KEY}:${KEY32}`, "multi"),
    link:
      "ss://2022-blake3-aes-256-gcm:YctPZ6U7xPPcU%2Bgp3u%2B0tx%2FtRizJN9K8y%2BuKlW2qjlI%3D" +
      `%3A${KEY32_ESCAPED}@192.168.100.1:8888#multi`,
  },
];

for (const vector of VECTORS) {
  test(`shadowsocks golden: ${vector.name}`, () => {
    assert.equal(buildShadowsocksLink(vector.target), vector.link);
    assert.deepEqual(escapingProblems(vector.link), []);
    assert.deepEqual(decodeLink(vector.link), vector.target);
  });
}

test("2022 keys of the wrong length, more than two keys and empty passwords are refused", () => {
  const bad = [
    ss("2022-blake3-aes-128-gcm", KEY32, "x"),
    ss("2022-blake3-aes-256-gcm", KEY16, "x"),
    ss("2022-blake3-aes-256-gcm", "not base64!", "x"),
    ss("2022-blake3-aes-256-gcm", `${KEY32}:${KEY32}:${KEY32}`, "x"),
    ss("aes-128-gcm", "", "x"),
  ];
  for (const target of bad)
    assert.throws(() => buildShadowsocksLink(target), InvalidLinkTargetError, target.credential.password);
});

test("Xray's chacha20-poly1305 alias is written under the name every client knows", () => {
  const link = buildShadowsocksLink(ss("chacha20-poly1305", "p", "x"));
  assert.equal(
    Buffer.from(link.slice(5, link.indexOf("@")), "base64url").toString(),
    "chacha20-ietf-poly1305:p",
  );
  assert.deepEqual(decodeLink(link), ss("chacha20-poly1305", "p", "x"));
});
