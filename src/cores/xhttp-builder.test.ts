// The XHTTP settings the builder refuses or reads differently, each with the path Xray would blame:
// `extra` replacing the other settings, Xray's integer ranges, the client-only keys it checks but
// never sends, and the Xray 26 keys no layout can carry.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildInbound } from "./inbound-builder/build.ts";
import type { WireLayout } from "./wire-layout.ts";

const CLIENT = { id: "11111111-1111-4111-8111-111111111111", email: "x@t" };

function inbound(xhttpSettings: object, stream: object = {}): object {
  return {
    tag: "xh",
    port: 8443,
    protocol: "vless",
    settings: { clients: [CLIENT] },
    streamSettings: { network: "xhttp", xhttpSettings, ...stream },
  };
}

function problems(json: object, layout: WireLayout = "xray-25.10"): { path: string; message: string }[] {
  const result = buildInbound(json, layout);
  return result.ok ? [] : result.problems;
}

const at = (json: object, layout?: WireLayout) => problems(json, layout).map((p) => p.path);

describe("XHTTP settings the builder refuses", () => {
  test("a mode Xray does not know", () => {
    assert.deepEqual(at(inbound({ mode: "stream-down" })), ["streamSettings.xhttpSettings.mode"]);
  });

  test("a path without its leading slash", () => {
    assert.deepEqual(at(inbound({ path: "xh" })), ["streamSettings.xhttpSettings.path"]);
  });

  test("settings outside extra when extra is given (Xray reads them from extra alone)", () => {
    const json = inbound({ path: "/x", xPaddingBytes: "100-200", headers: { A: "b" }, extra: {} });
    assert.deepEqual(at(json), [
      "streamSettings.xhttpSettings.xPaddingBytes",
      "streamSettings.xhttpSettings.headers",
    ]);
  });

  test("host, path or mode inside extra (Xray overwrites them with the outer ones)", () => {
    assert.deepEqual(at(inbound({ extra: { path: "/y", mode: "packet-up" } })), [
      "streamSettings.xhttpSettings.extra.path",
      "streamSettings.xhttpSettings.extra.mode",
    ]);
  });

  test("a Host header: Xray refuses it, host is the place", () => {
    assert.deepEqual(at(inbound({ extra: { headers: { host: "a.example" } } })), [
      "streamSettings.xhttpSettings.extra.headers.host",
    ]);
  });

  test("header names that are not HTTP tokens, values and paths with line breaks or NULs", () => {
    const json = inbound({
      path: "/x\u0000y",
      host: "a.example\u2028",
      extra: { headers: { "X A": "1", "X-B": "a\r\nX-Injected: 1", "X-C": "tab\tok", "X-D": "\u2029" } },
    });
    assert.deepEqual(at(json), [
      "streamSettings.xhttpSettings.host",
      "streamSettings.xhttpSettings.path",
      "streamSettings.xhttpSettings.extra.headers.X A",
      "streamSettings.xhttpSettings.extra.headers.X-B",
      "streamSettings.xhttpSettings.extra.headers.X-D",
    ]);
  });

  test("padding that is switched off, and ranges that are not Xray's", () => {
    assert.deepEqual(at(inbound({ extra: { xPaddingBytes: -5 } })), [
      "streamSettings.xhttpSettings.extra.xPaddingBytes",
    ]);
    for (const bad of [
      "1-2-3",
      "a-b",
      " 100",
      "-100",
      1.5,
      2 ** 31,
      "99999999999",
      true,
      [1, 2],
      { from: 1 },
    ]) {
      assert.deepEqual(
        at(inbound({ scMaxEachPostBytes: bad })),
        ["streamSettings.xhttpSettings.scMaxEachPostBytes"],
        JSON.stringify(bad),
      );
    }
  });

  test("xmux with both maxConnections and maxConcurrency", () => {
    const json = inbound({ extra: { xmux: { maxConnections: 2, maxConcurrency: "16-32" } } });
    assert.deepEqual(at(json), ["streamSettings.xhttpSettings.extra.xmux.maxConnections"]);
  });

  test("downloadSettings and the Xray 26 obfuscation keys", () => {
    const json = inbound({ downloadSettings: {}, xPaddingObfsMode: true, extra: undefined });
    assert.deepEqual(at(json), [
      "streamSettings.xhttpSettings.xPaddingObfsMode",
      "streamSettings.xhttpSettings.downloadSettings",
    ]);
    assert.deepEqual(at(inbound({ extra: { sessionIDPlacement: "header" } })), [
      "streamSettings.xhttpSettings.extra.sessionIDPlacement",
    ]);
  });

  test("unknown keys are named, not dropped", () => {
    assert.deepEqual(at(inbound({ extra: { scMaxEachPostByte: 1 } })), [
      "streamSettings.xhttpSettings.extra.scMaxEachPostByte",
    ]);
  });

  test("both xhttpSettings and splithttpSettings: Xray reads the first", () => {
    assert.deepEqual(at(inbound({ path: "/x" }, { splithttpSettings: { path: "/y" } })), [
      "streamSettings.splithttpSettings",
    ]);
  });

  test("REALITY works under xhttp, not under ws", () => {
    const reality = {
      security: "reality",
      realitySettings: {
        target: "www.example.com:443",
        serverNames: ["www.example.com"],
        privateKey: "SMBY1fFvD9u_LtqgTTJ4HJJ-a4lGgTJxDSAu2YXTWEo",
        shortIds: [""],
      },
    };
    assert.deepEqual(at(inbound({}, reality)), []);
    const ws = { ...(inbound({}, reality) as { streamSettings: object }) };
    const wsJson = {
      ...ws,
      streamSettings: { ...ws.streamSettings, network: "ws", xhttpSettings: undefined },
    };
    assert.deepEqual(at(wsJson), ["streamSettings.network"]);
  });

  test("what builds: ranges as Xray writes them, client keys accepted", () => {
    const json = inbound({
      host: "cdn.example.com",
      path: "/x?ed=2048",
      mode: "stream-one",
      extra: {
        xPaddingBytes: 256,
        scMaxEachPostBytes: "1000000-500000",
        scMinPostsIntervalMs: "30",
        noGRPCHeader: false,
        xmux: { maxConnections: "2-4", cMaxReuseTimes: 0, hKeepAlivePeriod: -1 },
        headers: { "User-Agent": "Mozilla/5.0" },
      },
    });
    assert.deepEqual(problems(json), []);
    assert.deepEqual(problems(json, "xray-25.1"), []);
  });
});
