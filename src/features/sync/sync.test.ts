// The pure parts of provisioning: proxy ids and credentials, the desired state of an inbound on each
// core flavor, and the keyed lock.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { JsonObject } from "../../lib/json.ts";
import { KeyedLock } from "../../lib/keyed-lock.ts";
import { isUuid } from "../../lib/uuid.ts";
import { generateInboundSecrets } from "../templates/prepare.ts";
import { newCredential, proxyUserIdFor } from "./credentials.ts";
import { checkInbound, desiredInbound, type InboundSpec } from "./desired.ts";

const SERVER = "11111111-1111-4111-8111-111111111111";
const USER = "22222222-2222-4222-8222-222222222222";

describe("proxy ids and credentials", () => {
  test("the proxy id is u- + 16 hex of sha256(server:user): stable, per server", () => {
    const id = proxyUserIdFor(SERVER, USER);
    assert.match(id, /^u-[0-9a-f]{16}$/);
    assert.equal(proxyUserIdFor(SERVER, USER), id);
    assert.notEqual(proxyUserIdFor(USER, SERVER), id);
  });

  test("credentials: a UUID for vless/vmess, 24 base64url characters for trojan and AEAD, a sized key for SS-2022", () => {
    assert.ok(isUuid(newCredential("vless")));
    assert.ok(isUuid(newCredential("vmess")));
    assert.match(newCredential("trojan"), /^[A-Za-z0-9_-]{24}$/);
    assert.match(newCredential("shadowsocks", "chacha20-ietf-poly1305"), /^[A-Za-z0-9_-]{24}$/);
    assert.equal(Buffer.from(newCredential("shadowsocks", "2022-blake3-aes-128-gcm"), "base64").length, 16);
    assert.equal(Buffer.from(newCredential("shadowsocks", "2022-blake3-aes-256-gcm"), "base64").length, 32);
    assert.notEqual(newCredential("trojan"), newCredential("trojan"));
  });
});

const ssConfig = (method: string, extra: JsonObject = {}): JsonObject => ({
  listen: "127.0.0.1",
  protocol: "shadowsocks",
  settings: { method, network: "tcp", ...extra },
});

function spec(config: JsonObject, grants = 0, overrides: Partial<InboundSpec> = {}): InboundSpec {
  const protocol = config.protocol as InboundSpec["protocol"];
  const method = (config.settings as JsonObject | undefined)?.method;
  return {
    template: { config, variables: [], client_flow: "" },
    protocol,
    shadowsocksMethod: typeof method === "string" ? method : null,
    tag: "t-1",
    port: 10443,
    values: {},
    secrets: generateInboundSecrets({ config }),
    grants: Array.from({ length: grants }, (_, i) => ({
      proxyUserId: `u-${String(i).padStart(16, "0")}`,
      credential: newCredential(protocol, typeof method === "string" ? method : undefined),
      level: 0,
    })),
    ...overrides,
  };
}

describe("the desired state of an inbound", () => {
  test("V2Ray shadowsocks: nothing without a grant, the one user inside the inbound, a second is core_capacity", () => {
    const none = desiredInbound(spec(ssConfig("aes-128-gcm")), "v2ray");
    assert.ok(none.ok && none.value.inbound === undefined);
    const one = desiredInbound(spec(ssConfig("aes-128-gcm"), 1), "v2ray");
    assert.ok(one.ok && one.value.inbound !== undefined);
    assert.deepEqual(one.value.inbound.emails, ["u-0000000000000000"]);
    assert.deepEqual(one.value.users, []);
    const two = desiredInbound(spec(ssConfig("aes-128-gcm"), 2), "v2ray");
    assert.ok(!two.ok && two.code === "core_capacity");
    assert.ok(checkInbound(spec(ssConfig("aes-128-gcm")), "v2ray").ok, "checked with a stand-in user");
  });

  test("Xray shadowsocks (2022 too) takes its users through AddUser", () => {
    const config = ssConfig("2022-blake3-aes-128-gcm", { password: "{{ss2022_server_key}}" });
    const result = desiredInbound(spec(config, 2), "xray");
    assert.ok(result.ok, JSON.stringify(!result.ok && result.problems));
    assert.deepEqual(result.value.inbound?.emails, []);
    assert.equal(result.value.users.length, 2);
    assert.equal(result.value.inbound?.ref.shadowsocksMethod, "2022-blake3-aes-128-gcm");
  });

  test("VLESS + REALITY + Vision builds on Xray; on V2Ray it is refused, naming the rendered config", () => {
    const config: JsonObject = {
      protocol: "vless",
      settings: { clients: [], decryption: "none" },
      streamSettings: {
        network: "tcp",
        security: "reality",
        realitySettings: {
          dest: "www.example.com:443",
          serverNames: ["www.example.com"],
          privateKey: "{{reality_private_key}}",
          shortIds: ["{{reality_short_id}}"],
        },
      },
    };
    const vision = { config, variables: [], client_flow: "xtls-rprx-vision" as const };
    const xray = desiredInbound(spec(config, 1, { template: vision }), "xray");
    assert.ok(xray.ok, JSON.stringify(!xray.ok && xray.problems));
    const v2ray = desiredInbound(spec(config, 1, { template: vision }), "v2ray");
    assert.ok(!v2ray.ok && v2ray.code === "invalid_inbound");
    assert.ok(v2ray.problems.some((p) => p.path.startsWith("config.streamSettings")));
  });

  test("variable problems name variable_values; builder problems name the rendered config", () => {
    const config: JsonObject = {
      protocol: "vmess",
      settings: { clients: [] },
      streamSettings: { network: "ws", wsSettings: { path: "{{ws_path}}" } },
    };
    const template = {
      config,
      variables: [{ name: "ws_path", description: "", default: "/ws", required: false }],
      client_flow: "" as const,
    };
    const wrongType = desiredInbound(spec(config, 0, { template, values: { ws_path: 3 } }), "xray");
    assert.ok(!wrongType.ok);
    assert.equal(wrongType.problems[0]?.path, "variable_values.ws_path");
    const reserved = desiredInbound(spec(config, 0, { template, tag: "api" }), "v2ray");
    assert.ok(!reserved.ok);
    assert.equal(reserved.problems[0]?.path, "config.tag");
  });
});

describe("KeyedLock", () => {
  test("runs tasks of one key one at a time, other keys alongside, and carries on after a failure", async () => {
    const lock = new KeyedLock();
    const log: string[] = [];
    const step = (name: string, ms: number) => async () => {
      log.push(`${name}+`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      log.push(`${name}-`);
      return name;
    };
    const failing = lock.run("a", async () => {
      log.push("f");
      throw new Error("boom");
    });
    const results = await Promise.allSettled([
      failing,
      lock.run("a", step("a1", 20)),
      lock.run("a", step("a2", 1)),
      lock.run("b", step("b1", 5)),
    ]);
    assert.equal(results[0]?.status, "rejected");
    assert.deepEqual(
      log.filter((entry) => entry.startsWith("a") || entry === "f"),
      ["f", "a1+", "a1-", "a2+", "a2-"],
    );
    assert.ok(log.indexOf("b1+") < log.indexOf("a1-"), "another key does not wait");
  });
});
