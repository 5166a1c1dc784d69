// The pure parts of inbounds: generated tags, and the link parameters read from a rendered template
// (what a share link says apart from the user's credential).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { JsonObject } from "../../lib/json.ts";
import { buildLink } from "../../links/build.ts";
import { generateRealityKeys, realityPublicKey } from "../templates/reality.ts";
import { computeLinkParams, linkTargetOf } from "./link-params.ts";
import { slugOf, tagCandidates } from "./tags.ts";

const ssConfig = (method: string, extra: JsonObject = {}): JsonObject => ({
  listen: "127.0.0.1",
  protocol: "shadowsocks",
  settings: { method, network: "tcp", ...extra },
});

describe("generated tags", () => {
  test("the template name as a slug plus the port, then -2, -3…", () => {
    assert.equal(slugOf("VLESS  WS+TLS (Zoë)"), "vless-ws-tls-zoe");
    assert.equal(slugOf("!!!"), "inbound");
    const candidates = tagCandidates("vmess-ws-tls", 443);
    assert.deepEqual(
      [candidates.next().value, candidates.next().value, candidates.next().value],
      ["vmess-ws-tls-443", "vmess-ws-tls-443-2", "vmess-ws-tls-443-3"],
    );
  });
});

describe("link parameters", () => {
  const server = { name: "Berlin", hostname: "vpn.example.com" };

  test("ws + TLS: SNI and Host from the certificate; a wildcard certificate gives the hostname", () => {
    const json: JsonObject = {
      protocol: "vless",
      settings: { decryption: "none" },
      streamSettings: {
        network: "ws",
        security: "tls",
        wsSettings: { path: "/p?ed=2048" },
        tlsSettings: { alpn: ["h2", "http/1.1"], fingerprint: "chrome" },
      },
    };
    const input = { json, protocol: "vless" as const, clientFlow: "", server, tag: "ws-443", port: 443 };
    const params = computeLinkParams({ ...input, certificateDomain: "cdn.example.com" });
    assert.deepEqual(params.transport, { type: "ws", path: "/p?ed=2048", host: "cdn.example.com" });
    assert.deepEqual(params.security, {
      type: "tls",
      sni: "cdn.example.com",
      alpn: ["h2", "http/1.1"],
      fingerprint: "chrome",
    });
    assert.equal(params.remark, "Berlin ws-443");
    const wildcard = computeLinkParams({ ...input, certificateDomain: "*.example.com" });
    assert.ok(wildcard.security.type === "tls");
    assert.equal(wildcard.security.sni, "vpn.example.com");
    const link = buildLink(linkTargetOf(params, "33333333-3333-4333-8333-333333333333"));
    assert.match(link, /path=%2Fp%3Fed%3D2048/);
  });

  test("REALITY: the public key derived from the rendered private key, the first server name and short id", () => {
    const keys = generateRealityKeys();
    const json: JsonObject = {
      protocol: "vless",
      streamSettings: {
        network: "tcp",
        security: "reality",
        realitySettings: {
          serverNames: ["a.example", "b.example"],
          privateKey: keys.privateKey,
          shortIds: ["abcd", ""],
        },
      },
    };
    const params = computeLinkParams({
      json,
      protocol: "vless",
      clientFlow: "xtls-rprx-vision",
      server,
      tag: "r",
      port: 443,
    });
    assert.deepEqual(params.security, {
      type: "reality",
      sni: "a.example",
      publicKey: realityPublicKey(keys.privateKey),
      shortId: "abcd",
      fingerprint: "chrome",
    });
    assert.equal(params.vlessFlow, "xtls-rprx-vision");
  });

  test("Shadowsocks 2022: the link password is serverKey:userKey; AEAD keeps the user's password", () => {
    const json = ssConfig("2022-blake3-aes-128-gcm", { password: "AAAAAAAAAAAAAAAAAAAAAA==" });
    const params = computeLinkParams({
      json,
      protocol: "shadowsocks",
      clientFlow: "",
      server,
      tag: "s",
      port: 8388,
    });
    const target = linkTargetOf(params, "BBBBBBBBBBBBBBBBBBBBBB==");
    assert.ok(target.protocol === "shadowsocks");
    assert.equal(target.credential.password, "AAAAAAAAAAAAAAAAAAAAAA==:BBBBBBBBBBBBBBBBBBBBBB==");
    const aead = computeLinkParams({
      json: ssConfig("aead_aes_256_gcm"),
      protocol: "shadowsocks",
      clientFlow: "",
      server,
      tag: "a",
      port: 1,
    });
    const aeadTarget = linkTargetOf(aead, "pw");
    assert.ok(aeadTarget.protocol === "shadowsocks");
    assert.deepEqual(aeadTarget.credential, { method: "aes-256-gcm", password: "pw" });
  });

  test("XHTTP: path, host, mode, and the client settings as extra; server-only settings stay behind", () => {
    const json: JsonObject = {
      protocol: "vless",
      settings: { decryption: "none" },
      streamSettings: {
        network: "xhttp",
        security: "tls",
        xhttpSettings: {
          path: "/xh",
          mode: "stream-up",
          extra: {
            headers: { "User-Agent": "Mozilla/5.0" },
            xPaddingBytes: "1000-100",
            noGRPCHeader: true,
            noSSEHeader: true,
            scMaxEachPostBytes: 500000,
            scMaxBufferedPosts: 30,
            scStreamUpServerSecs: "20-80",
            scMinPostsIntervalMs: 0,
            xmux: { maxConcurrency: "16-32", maxConnections: 0 },
          },
        },
      },
    };
    const input = { json, protocol: "vless" as const, clientFlow: "", server, tag: "xh", port: 443 };
    const params = computeLinkParams({ ...input, certificateDomain: "cdn.example.com" });
    assert.deepEqual(params.transport, {
      type: "xhttp",
      path: "/xh",
      mode: "stream-up",
      host: "cdn.example.com",
      extra: {
        headers: { "User-Agent": "Mozilla/5.0" },
        xPaddingBytes: "100-1000",
        scMaxEachPostBytes: "500000",
        noGRPCHeader: true,
        xmux: { maxConcurrency: "16-32" },
      },
    });
    const bare = computeLinkParams({
      ...input,
      json: { ...json, streamSettings: { network: "splithttp", splithttpSettings: { host: "h.example" } } },
    });
    assert.deepEqual(bare.transport, { type: "xhttp", path: "/", mode: "auto", host: "h.example" });
  });

  test("VMess links name an explicit cipher, never auto", () => {
    const json: JsonObject = { protocol: "vmess", streamSettings: { network: "ws" } };
    const params = computeLinkParams({ json, protocol: "vmess", clientFlow: "", server, tag: "v", port: 80 });
    const target = linkTargetOf(params, "b831381d-6324-4d53-ad4f-8cda48b30811");
    assert.ok(target.protocol === "vmess");
    assert.equal(target.credential.cipher, "aes-128-gcm");
  });
});
