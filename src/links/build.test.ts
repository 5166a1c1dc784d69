// Every protocol × transport × security the builders accept, with hostile strings everywhere a
// user or operator can put text: each link must be cleanly escaped and decode back to its target.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeLink, escapingProblems } from "../../test/support/link-decoder.ts";
import type { ShadowsocksMethod } from "../protocols/shadowsocks.ts";
import { buildLink, buildLinks, uniqueRemarks } from "./build.ts";
import type { LinkTarget, Security, TlsSecurity, Transport } from "./types.ts";

const ID = "b831381d-6324-4d53-ad4f-8cda48b30811";
const NASTY = "a b+c=d&e#f%g?h/i:j@k,l ü 🇩🇪 \"q\" 'r'";
const HOSTS = ["vpn.example.com", "2001:db8::1", "203.0.113.1"];
const PBK = "Z84J2IelR9ch3k8VtlVhhs5ycBUlXA7wHBWcBrjqnAw";

const TRANSPORTS: Transport[] = [
  { type: "tcp" },
  { type: "tcp", http: { host: ["h1.example.com", "h 2+="], path: ["/a b", "/c+d=e&f%"] } },
  { type: "ws", path: "/p?ed=2048&x=+1 %", host: "cdn.example.com" },
  { type: "ws" },
  { type: "httpupgrade", path: "/ü/💡", host: "cdn.example.com" },
  { type: "grpc", serviceName: "svc name+/=&", mode: "multi", authority: "cdn.example.com" },
  { type: "grpc", serviceName: "s", mode: "gun" },
];

const TLS_OPTIONS: TlsSecurity[] = [
  { type: "tls" },
  {
    type: "tls",
    sni: "sni.example.com",
    alpn: ["h2", "http/1.1"],
    fingerprint: "randomized",
    allowInsecure: true,
  },
];
const SECURITIES: Security[] = [
  { type: "none" },
  ...TLS_OPTIONS,
  { type: "reality", sni: "www.example.com", publicKey: PBK, shortId: "", fingerprint: "chrome" },
  {
    type: "reality",
    sni: "www.example.com",
    publicKey: PBK,
    shortId: "0123456789abcdef",
    fingerprint: "qq",
    spiderX: NASTY,
  },
];

const SS_METHODS: [ShadowsocksMethod, string][] = [
  ["aes-128-gcm", NASTY],
  ["aes-256-gcm", "x"],
  ["chacha20-poly1305", "::"],
  ["2022-blake3-aes-128-gcm", "AAECAwQFBgcICQoLDA0ODw=="],
  [
    "2022-blake3-aes-256-gcm",
    "+/v7AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxw=:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
  ],
  ["2022-blake3-aes-256-gcm", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="],
];

/** The combinations that make sense: REALITY only for vless over tcp (no header) or grpc. */
function allTargets(): LinkTarget[] {
  const targets: LinkTarget[] = [];
  let n = 0;
  const endpoint = () => ({
    host: HOSTS[n % HOSTS.length] ?? "",
    port: 1 + ((n * 7919) % 65535),
    remark: `${NASTY} ${n++}`,
  });
  for (const transport of TRANSPORTS) {
    for (const security of SECURITIES) {
      const isVision = transport.type === "tcp" && transport.http === undefined && security.type !== "none";
      const realityFits =
        transport.type === "grpc" || (transport.type === "tcp" && transport.http === undefined);
      if (security.type === "reality" && !realityFits) continue;
      const flow = isVision ? ({ flow: "xtls-rprx-vision" } as const) : {};
      targets.push({
        protocol: "vless",
        ...endpoint(),
        credential: { id: ID, encryption: "none", ...flow },
        transport,
        security,
      });
      if (security.type === "reality") continue;
      const cipher = (["aes-128-gcm", "chacha20-poly1305"] as const)[n % 2] ?? "aes-128-gcm";
      targets.push({ protocol: "vmess", ...endpoint(), credential: { id: ID, cipher }, transport, security });
      targets.push({
        protocol: "trojan",
        ...endpoint(),
        credential: { password: NASTY },
        transport,
        security,
      });
    }
  }
  for (const [method, password] of SS_METHODS) {
    targets.push({ protocol: "shadowsocks", ...endpoint(), credential: { method, password } });
  }
  return targets;
}

for (const target of allTargets()) {
  const { protocol, remark } = target;
  const shape =
    "transport" in target
      ? `${target.transport.type}${target.transport.type === "tcp" && target.transport.http ? "+http" : ""}/${target.security.type}`
      : target.credential.method;
  test(`round trip ${protocol} ${shape} #${remark.split(" ").at(-1)}`, () => {
    const link = buildLink(target);
    assert.ok(link.startsWith(protocol === "shadowsocks" ? "ss://" : `${protocol}://`));
    assert.doesNotMatch(link, /[\s\n]/);
    assert.deepEqual(escapingProblems(link), []);
    assert.deepEqual(decodeLink(link), target);
  });
}

test("buildLinks makes remarks unique in subscription order", () => {
  const base = {
    protocol: "trojan",
    host: "vpn.example.com",
    port: 443,
    credential: { password: "p" },
  } as const;
  const target = { ...base, transport: { type: "tcp" }, security: { type: "tls" } } as const;
  const links = buildLinks([
    { ...target, remark: "DE" },
    { ...target, remark: "DE" },
    { ...target, remark: "DE (2)" },
  ]);
  assert.deepEqual(
    links.map((link) => decodeLink(link).remark),
    ["DE", "DE (3)", "DE (2)"],
  );
});

test("uniqueRemarks keeps first uses and never collides with a later original", () => {
  assert.deepEqual(uniqueRemarks(["A", "A", "A (2)", "B", "A", "B"]), [
    "A",
    "A (3)",
    "A (2)",
    "B",
    "A (4)",
    "B (2)",
  ]);
  assert.deepEqual(uniqueRemarks([]), []);
  assert.deepEqual(uniqueRemarks(["x", "y"]), ["x", "y"]);
});

test("a lone surrogate in a remark becomes U+FFFD instead of throwing", () => {
  const target = { protocol: "shadowsocks", host: "a.example", port: 1, remark: "x\uD800y" } as const;
  const link = buildLink({ ...target, credential: { method: "aes-128-gcm", password: "p" } });
  assert.equal(decodeLink(link).remark, "x\uFFFDy");
});
