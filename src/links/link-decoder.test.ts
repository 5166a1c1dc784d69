// The test decoder must be at least as strict as the pickiest client, or round trips prove little:
// these links break a rule of share-links.md and must be refused or reported.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeLink, escapingProblems, LinkDecodeError } from "../../test/support/link-decoder.ts";

const ID = "b831381d-6324-4d53-ad4f-8cda48b30811";
const VLESS = `vless://${ID}@h.example:443?encryption=none&security=none&type=ws`;
const vmess = (json: object, encoding: "base64" | "base64url" = "base64") =>
  `vmess://${Buffer.from(JSON.stringify(json)).toString(encoding)}`;
const VMESS_JSON = {
  v: "2",
  ps: "r",
  add: "h.example",
  port: "443",
  id: ID,
  aid: "0",
  scy: "aes-128-gcm",
  net: "tcp",
  type: "none",
  host: "",
  path: "",
  tls: "",
  sni: "",
  alpn: "",
  fp: "",
};

const REFUSED: [string, string][] = [
  ["no port", `vless://${ID}@h.example?encryption=none&security=none&type=tcp&headerType=none#r`],
  ["raw + in a value (a space to Go)", `${VLESS}&path=%2Fa+b#r`],
  ["raw = in a value (v2rayN drops the pair)", `${VLESS}&path=%2Fws?ed=2048#r`],
  ["an empty value", `${VLESS}&host=#r`],
  ["a bare key (v2rayNG throws)", `${VLESS}&host#r`],
  ["a key twice", `${VLESS}&path=%2Fa&path=%2Fb#r`],
  ["a raw space in the remark", `${VLESS}#a b`],
  ["a malformed escape", `${VLESS}#100%`],
  ["no security key", `vless://${ID}@h.example:443?encryption=none&type=tcp&headerType=none#r`],
  ["type=raw", `vless://${ID}@h.example:443?encryption=none&security=none&type=raw#r`],
  ["allowInsecure=0", `vless://${ID}@h.example:443?encryption=none&security=tls&type=ws&allowInsecure=0#r`],
  ["an unknown key", `${VLESS}&fragment=1#r`],
  ["a raw : in a trojan password", "trojan://a:b@h.example:443?security=tls&type=tcp&headerType=none#r"],
  ["padded base64url ss userinfo", "ss://YWVzLTEyOC1nY206dGVzdA==@h.example:1#r"],
  ["standard base64 ss userinfo with /", "ss://YWVzLTEyOC1nY206Pj4/Pz8/@h.example:1#r"],
  [
    "a 2022 method in base64",
    `ss://${Buffer.from("2022-blake3-aes-128-gcm:AAAA").toString("base64url")}@h.example:1#r`,
  ],
  ["URL-safe vmess base64", vmess({ ...VMESS_JSON, ps: "??>>" }, "base64url")],
  ["vmess without ps", vmess({ ...VMESS_JSON, ps: undefined })],
  ["vmess port as a number", vmess({ ...VMESS_JSON, port: 443 })],
  ["vmess with an empty net", vmess({ ...VMESS_JSON, net: "" })],
  ["vmess IPv6 in brackets", vmess({ ...VMESS_JSON, add: "[2001:db8::1]" })],
  // sing-box-based apps send "auto" as written; Xray 26 refuses it (docs/LINKS.md, VMess cipher).
  ["vmess scy auto", vmess({ ...VMESS_JSON, scy: "auto" })],
  ["vmess without scy", vmess({ ...VMESS_JSON, scy: undefined })],
];

for (const [why, link] of REFUSED) {
  test(`the decoder refuses ${why}`, () => {
    assert.throws(() => decodeLink(link), LinkDecodeError);
  });
}

test("escapingProblems names each raw + space = & and bad % in values and the remark", () => {
  const link = `vless://${ID}@h.example:443?encryption=none&path=/a b+c&x=1=2&host=%zz#a+b c&d`;
  assert.deepEqual(escapingProblems(link), [
    'raw "+" in fragment',
    'raw " " in fragment',
    'raw "&" in fragment',
    'raw " " in value of path',
    'raw "+" in value of path',
    'pair "x=1=2" does not split into key=value',
    'raw "=" in value of x',
    "malformed % escape in value of host",
  ]);
  assert.deepEqual(escapingProblems(`${VLESS}#ok`), []);
  assert.deepEqual(escapingProblems(vmess(VMESS_JSON, "base64url").replace(/$/, "-")), [
    "vmess payload is not standard base64",
  ]);
});
