// Placeholder rendering, per-inbound secrets and prepareInboundJson, without a database.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildInbound } from "../../cores/inbound-builder/build.ts";
import type { JsonObject } from "../../lib/json.ts";
import { generateSs2022Key } from "../../protocols/shadowsocks.ts";
import { generateInboundSecrets, prepareInboundJson } from "./prepare.ts";
import { generateRealityKeys, generateShortId, realityPublicKey } from "./reality.ts";
import { placeholdersOf, placeholderUses, renderTemplate, type TemplateVariable } from "./render.ts";

const variable = (name: string, def: TemplateVariable["default"], required = false): TemplateVariable => ({
  name,
  description: "",
  default: def,
  required,
});

describe("renderTemplate", () => {
  test("an exact placeholder takes the value's JSON type: a number port and a list of serverNames", () => {
    const config: JsonObject = {
      port: "{{port}}",
      names: "{{ server_names }}",
      nested: { list: ["{{tag}}", 1] },
    };
    const result = renderTemplate(
      config,
      [variable("server_names", ["a.example"])],
      {},
      { port: 8443, tag: "in-1" },
    );
    assert.deepEqual(result, {
      ok: true,
      json: { port: 8443, names: ["a.example"], nested: { list: ["in-1", 1] } },
    });
  });

  test("embedded placeholders are stringified; the given value wins over the default", () => {
    const config: JsonObject = { path: "/{{prefix}}/{{port}}", list: "x{{items}}", empty: "[{{optional}}]" };
    const variables = [variable("prefix", "ws"), variable("items", [1, 2]), variable("optional", null)];
    const result = renderTemplate(config, variables, { prefix: "chat" }, { port: 443 });
    assert.deepEqual(result, { ok: true, json: { path: "/chat/443", list: "x[1,2]", empty: "[]" } });
  });

  test("unknown placeholders are reported with the path of each use", () => {
    const config: JsonObject = { a: "{{nope}}", b: ["ok", "x-{{ also_nope }}"] };
    const result = renderTemplate(config, [], {}, {});
    assert.equal(result.ok, false);
    assert.deepEqual(!result.ok && result.problems, [
      { path: "a", message: "unknown placeholder {{nope}}" },
      { path: "b[1]", message: "unknown placeholder {{also_nope}}" },
    ]);
  });

  test("a value of another type than the default is refused", () => {
    const variables = [variable("ws_path", "/x"), variable("names", ["a"]), variable("anything", null)];
    const result = renderTemplate(
      { a: "{{ws_path}}", b: "{{names}}", c: "{{anything}}" },
      variables,
      {
        ws_path: 5,
        names: "a",
        anything: { free: true },
      },
      {},
    );
    assert.equal(result.ok, false);
    assert.deepEqual(!result.ok && result.problems, [
      { path: "values.ws_path", message: "must be a string, like the default" },
      { path: "values.names", message: "must be an array, like the default" },
    ]);
  });

  test("a required variable without value or default, a value for no variable and a missing built-in", () => {
    const result = renderTemplate(
      { a: "{{must}}", b: "{{domain}}" },
      [variable("must", null, true)],
      { extra: 1 },
      {},
    );
    assert.equal(result.ok, false);
    assert.deepEqual(!result.ok && result.problems, [
      { path: "values.extra", message: "is not a variable of this template" },
      { path: "values.must", message: "is required" },
      { path: "b", message: "built-in {{domain}} has no value for this inbound" },
    ]);
  });

  test("a required variable with a default needs no value", () => {
    const result = renderTemplate({ a: "{{v}}" }, [variable("v", 7, true)], {}, {});
    assert.deepEqual(result, { ok: true, json: { a: 7 } });
  });

  test("rendering does not alias the defaults", () => {
    const variables = [variable("list", ["a"])];
    const result = renderTemplate({ x: "{{list}}" }, variables, {}, {});
    assert.ok(result.ok);
    (result.json.x as string[]).push("b");
    assert.deepEqual(variables[0]?.default, ["a"]);
  });
});

test("placeholdersOf lists distinct names in order; placeholderUses marks exact uses", () => {
  const config: JsonObject = { a: "{{port}}", b: { c: ["{{ x }}-{{y}}", "{{port}}"] }, "{{k}}": 1 };
  assert.deepEqual(placeholdersOf(config), ["port", "x", "y"]);
  assert.deepEqual(placeholderUses(config)[1], { name: "x", path: "b.c[0]", exact: false });
  assert.deepEqual(placeholderUses(config)[0], { name: "port", path: "a", exact: true });
});

describe("per-inbound secrets", () => {
  test("REALITY keys are 43-character base64url and the public key derives from the private one", () => {
    const keys = generateRealityKeys();
    assert.match(keys.privateKey, /^[A-Za-z0-9_-]{43}$/);
    assert.match(keys.publicKey, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(realityPublicKey(keys.privateKey), keys.publicKey);
    assert.notEqual(generateRealityKeys().privateKey, keys.privateKey);
  });

  test("realityPublicKey matches the RFC 7748 test vector", () => {
    const alice = Buffer.from("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", "hex");
    const expected = Buffer.from("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", "hex");
    assert.equal(realityPublicKey(alice.toString("base64url")), expected.toString("base64url"));
    assert.throws(() => realityPublicKey("too-short"), RangeError);
  });

  test("short ids are 8 hex characters; SS-2022 keys have the method's length", () => {
    assert.match(generateShortId(), /^[0-9a-f]{8}$/);
    assert.equal(Buffer.from(generateSs2022Key("2022-blake3-aes-128-gcm"), "base64").length, 16);
    assert.equal(Buffer.from(generateSs2022Key("2022-blake3-aes-256-gcm"), "base64").length, 32);
  });

  test("generateInboundSecrets makes only what the template uses", () => {
    assert.deepEqual(generateInboundSecrets({ config: { protocol: "vmess" } }), {});
    const reality = generateInboundSecrets({ config: { streamSettings: { security: "reality" } } });
    assert.deepEqual(Object.keys(reality).sort(), [
      "reality_private_key",
      "reality_public_key",
      "reality_short_id",
    ]);
    const ss = generateInboundSecrets({
      config: { settings: { method: "2022-blake3-aes-256-gcm", password: "{{ss2022_server_key}}" } },
    });
    assert.equal(Buffer.from(ss.ss2022_server_key ?? "", "base64").length, 32);
  });
});

describe("prepareInboundJson", () => {
  const tlsTemplate = {
    config: {
      protocol: "trojan",
      settings: { clients: [] },
      streamSettings: { network: "tcp", security: "tls", tlsSettings: { serverName: "{{domain}}" } },
    } satisfies JsonObject,
    variables: [],
  };

  test("fills port and tag from the built-ins and injects the certificate under TLS", () => {
    const certificate = {
      certificatePem: "-----BEGIN CERTIFICATE-----\nx",
      keyPem: "-----BEGIN PRIVATE KEY-----\ny",
    };
    const result = prepareInboundJson(tlsTemplate, {
      values: {},
      builtins: { port: 8443, tag: "trojan-1", domain: "vpn.example.com" },
      certificate,
    });
    assert.ok(result.ok);
    assert.equal(result.json.port, 8443);
    assert.equal(result.json.tag, "trojan-1");
    assert.deepEqual(result.json.streamSettings, {
      network: "tcp",
      security: "tls",
      tlsSettings: {
        serverName: "vpn.example.com",
        certificates: [{ certificate: certificate.certificatePem, key: certificate.keyPem }],
      },
    });
    assert.deepEqual(
      tlsTemplate.config.streamSettings.tlsSettings,
      { serverName: "{{domain}}" },
      "template untouched",
    );
  });

  test("a TLS template without a certificate, or without port and tag, is refused", () => {
    const result = prepareInboundJson(tlsTemplate, { values: {}, builtins: { domain: "a.example" } });
    assert.equal(result.ok, false);
    assert.deepEqual(!result.ok && result.problems.map((p) => p.path), ["port", "tag", "certificate"]);
  });

  test("a REALITY inbound built from generated secrets is accepted by the builder for xray", () => {
    const template = {
      config: {
        port: "{{port}}",
        tag: "{{tag}}",
        protocol: "vless",
        settings: { decryption: "none" },
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
      } satisfies JsonObject,
      variables: [],
    };
    const secrets = generateInboundSecrets(template);
    const result = prepareInboundJson(template, {
      values: {},
      builtins: { port: 443, tag: "r-1", ...secrets },
    });
    assert.ok(result.ok);
    const built = buildInbound(result.json, "xray");
    assert.ok(built.ok, JSON.stringify(!built.ok && built.problems));
    assert.equal(built.value.port, 443);
  });

  test("clients, when given, become settings.clients", () => {
    const result = prepareInboundJson(
      { config: { protocol: "shadowsocks", settings: { method: "aes-128-gcm" } }, variables: [] },
      { values: {}, builtins: { port: 1, tag: "t" }, clients: [{ email: "a", password: "p" }] },
    );
    assert.ok(result.ok);
    assert.deepEqual(result.json.settings, {
      method: "aes-128-gcm",
      clients: [{ email: "a", password: "p" }],
    });
  });
});
