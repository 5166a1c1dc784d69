// Save-time validation of templates through the API: the template's own rules (template_invalid)
// and the inbound builder run for each core flavor (template_unsupported), on either dialect.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { expectProblem, realityTemplate, request, wsTemplate } from "../../../test/support/templates.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

const api = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) =>
  request(t, method, url, payload);

describe("save-time validation", () => {
  test("unknown placeholders are 422 template_invalid, each listed with its path", async () => {
    const body = wsTemplate();
    (body.config as { sniffing?: unknown }).sniffing = { enabled: "{{sniff}}" };
    (body.variables as unknown[]).pop();
    const errors = expectProblem(await api("POST", "/api/templates", body), 422, "template_invalid");
    assert.deepEqual(errors, [
      { path: "config.streamSettings.wsSettings.path", message: "unknown placeholder {{ws_path}}" },
      { path: "config.sniffing.enabled", message: "unknown placeholder {{sniff}}" },
    ]);
  });

  test("bad variable names, built-in names, duplicates, users, certificates and fixed ports are template_invalid", async () => {
    const body = wsTemplate({
      variables: [
        { name: "Path", default: "/x" },
        { name: "domain", default: "x" },
        { name: "ws_path", default: "/x" },
        { name: "ws_path", default: "/y" },
      ],
    });
    const config = body.config as Record<string, Record<string, unknown>>;
    config.port = 443 as never;
    config.settings = { clients: [{ id: "00000000-0000-4000-8000-000000000000", email: "a" }] };
    config.streamSettings = { ...config.streamSettings, tlsSettings: { certificates: [] } };
    const errors = expectProblem(await api("POST", "/api/templates", body), 422, "template_invalid");
    assert.deepEqual(
      errors.map((e) => e.path),
      [
        "variables[0].name",
        "variables[1].name",
        "variables[3].name",
        "config.port",
        "config.settings.clients",
        "config.streamSettings.tlsSettings.certificates",
      ],
    );
  });

  test("a default of the wrong type for its field fails on every flavor: 422 template_unsupported", async () => {
    const errors = expectProblem(
      await api("POST", "/api/templates", wsTemplate({ variables: [{ name: "ws_path", default: 80 }] })),
      422,
      "template_unsupported",
    );
    assert.deepEqual(
      errors.map((e) => e.path),
      ["xray: streamSettings.wsSettings.path", "v2ray: streamSettings.wsSettings.path"],
    );
  });

  test("REALITY over WebSocket builds nowhere; the problems are listed per flavor", async () => {
    const body = realityTemplate({ client_flow: "" });
    const stream = (body.config as { streamSettings: Record<string, unknown> }).streamSettings;
    stream.network = "ws";
    const errors = expectProblem(await api("POST", "/api/templates", body), 422, "template_unsupported");
    assert.ok(
      errors.some((e) => e.path === "xray: streamSettings.network"),
      JSON.stringify(errors),
    );
    assert.ok(
      errors.some((e) => e.path === "v2ray: streamSettings.security"),
      JSON.stringify(errors),
    );
  });

  test("the Vision flow needs VLESS over tcp with tls or reality, and Xray", async () => {
    const onVmess = await api("POST", "/api/templates", wsTemplate({ client_flow: "xtls-rprx-vision" }));
    expectProblem(onVmess, 422, "template_invalid");
    const body = wsTemplate({ client_flow: "xtls-rprx-vision" });
    (body.config as { protocol: string }).protocol = "vless";
    const errors = expectProblem(await api("POST", "/api/templates", body), 422, "template_unsupported");
    assert.ok(
      errors.some((e) => e.path === "v2ray: client_flow"),
      JSON.stringify(errors),
    );
    assert.ok(
      errors.some((e) => e.path === "xray: settings.clients"),
      JSON.stringify(errors),
    );
  });

  test("a placeholder in protocol, network or security is template_invalid", async () => {
    const body = wsTemplate({
      variables: [
        { name: "ws_path", default: "/x" },
        { name: "net", default: "ws" },
      ],
    });
    const config = body.config as { protocol: string; streamSettings: Record<string, unknown> };
    config.protocol = "{{tag}}";
    config.streamSettings.network = "{{net}}";
    const errors = expectProblem(await api("POST", "/api/templates", body), 422, "template_invalid");
    assert.deepEqual(
      errors.map((e) => e.path),
      ["config.protocol", "config.streamSettings.network"],
    );
  });
});
