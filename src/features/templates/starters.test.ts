// The shipped starter templates: each builds on exactly the flavors it claims, both at save time and
// as a provisioned inbound with fresh secrets; `portcullis templates install-starters` is idempotent.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { run } from "../../cli/templates.ts";
import { CORE_FLAVORS } from "../../cores/core-types.ts";
import { buildInbound } from "../../cores/inbound-builder/build.ts";
import type { JsonObject } from "../../lib/json.ts";
import { generateSelfSigned } from "../certificates/self-signed.ts";
import { checkTemplate } from "./check.ts";
import { generateInboundSecrets, prepareInboundJson } from "./prepare.ts";
import type { TemplateVariable } from "./render.ts";
import { loadStarters, STARTER_NAMES } from "./starters.ts";

const starters = loadStarters();

function variablesOf(template: (typeof starters)[number]["template"]): TemplateVariable[] {
  return (template.variables ?? []).map((v) => ({
    name: v.name,
    description: v.description ?? "",
    default: (v.default ?? null) as TemplateVariable["default"],
    required: v.required ?? false,
  }));
}

describe("starter templates", () => {
  test("there is one per documented name; REALITY, XHTTP and SS-2022 claim xray only", () => {
    assert.deepEqual(
      starters.map((s) => s.template.name),
      [...STARTER_NAMES],
    );
    const xrayOnly = starters.filter((s) => s.claimedCores.length === 1).map((s) => s.template.name);
    assert.deepEqual(xrayOnly, ["vless-reality-vision", "vless-xhttp-reality", "shadowsocks-2022"]);
  });

  for (const { template, claimedCores } of starters) {
    test(`${template.name} passes the save-time check on exactly ${claimedCores.join(" and ")}`, async () => {
      const result = await checkTemplate({
        config: template.config as JsonObject,
        variables: variablesOf(template),
        client_flow: template.client_flow ?? "",
      });
      assert.deepEqual(result, { ok: true, supportedCores: claimedCores });
    });

    test(`${template.name} as a provisioned inbound builds on its cores and no other`, async () => {
      const made = await generateSelfSigned({ domain: "vpn.example.com" });
      const definition = { config: template.config as JsonObject, variables: variablesOf(template) };
      const prepared = prepareInboundJson(definition, {
        values: {},
        builtins: {
          port: 20443,
          tag: "starter-1",
          domain: "vpn.example.com",
          ...generateInboundSecrets(definition),
        },
        certificate: { certificatePem: made.certificatePem, keyPem: made.privateKeyPem },
      });
      assert.ok(prepared.ok, JSON.stringify(!prepared.ok && prepared.problems));
      for (const flavor of CORE_FLAVORS) {
        // V2Ray 4.x shadowsocks holds its one user in the inbound itself.
        const oneUser = flavor === "v2ray" && template.config.protocol === "shadowsocks";
        const json = oneUser
          ? {
              ...prepared.json,
              settings: { ...(prepared.json.settings as object), password: "pw", email: "u" },
            }
          : prepared.json;
        const built = buildInbound(json, flavor);
        assert.equal(
          built.ok,
          claimedCores.includes(flavor),
          `${flavor}: ${JSON.stringify(!built.ok && built.problems)}`,
        );
      }
    });
  }
});

describe("portcullis templates", () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => {
    await t.close();
  });

  async function cli(...args: string[]): Promise<{ code: number; output: string; errors: string }> {
    let output = "";
    let errors = "";
    const code = await run(args, {
      deps: t.deps,
      write: (text) => (output += text),
      writeError: (text) => (errors += text),
    });
    return { code, output, errors };
  }

  test("install-starters installs every starter once, then skips them all", async () => {
    const first = await cli("install-starters");
    assert.equal(first.code, 0);
    assert.match(first.output, /^installed vless-reality-vision \(cores: xray\)$/m);
    assert.match(first.output, /^installed vless-ws-tls \(cores: xray, v2ray\)$/m);
    assert.match(first.output, /^7 installed, 0 skipped$/m);
    const listed = (await t.app.inject({ method: "GET", url: "/api/templates", headers: t.auth })).json();
    assert.deepEqual(listed.map((item: { name: string }) => item.name).sort(), [...STARTER_NAMES].sort());
    const again = await cli("install-starters");
    assert.equal(again.code, 0);
    assert.match(again.output, /^skipped shadowsocks-2022: a template with this name exists$/m);
    assert.match(again.output, /^0 installed, 7 skipped$/m);
  });

  test("list prints a header, then one line per template with its shape and cores", async () => {
    const { code, output } = await cli("list");
    assert.equal(code, 0);
    assert.equal(output.split("\n")[0], "NAME\tSHAPE\tCORES\tID");
    assert.match(output, /^vless-reality-vision\tvless\/tcp\/reality\txray\t[0-9a-f-]{36}$/m);
    assert.match(output, /^trojan-tcp-tls\ttrojan\/tcp\/tls\txray,v2ray\t[0-9a-f-]{36}$/m);
  });

  test("an unknown action is a usage error", async () => {
    const result = await cli("remove-all");
    assert.equal(result.code, 2);
    assert.match(result.errors, /^usage: portcullis templates install-starters$/m);
  });
});
