// The inbounds API on whichever dialect DATABASE_URL selects. Most cases use a server whose core
// nobody runs (a free port): the inbound is stored 'pending' and nothing hangs. Flavor-specific
// refusals use a real V2Ray 4.34 core.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  apiCertificate,
  createInbound,
  grant,
  kindTemplate,
  registerServer,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { createTemplate, expectProblem, realityTemplate, request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../../../test/support/v2ray.ts";

const needs = requires("v2ray");

const TIMEOUT_MS = 1500;
const stack = new CleanupStack();
let t: TestApp;
let downServer: string;
let core: V2rayServer;
let coreServer: string;
let plainTemplate: { id: string; name: string };
let tlsTemplate: { id: string; name: string };

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: String(TIMEOUT_MS) });
  downServer = (await registerServer(t, await freePort(), { name: "nobody listens" })).id;
  core = await startV2rayServer(stack.add);
  coreServer = (await registerServer(t, core.apiPort, { name: "real v2ray" })).id;
  plainTemplate = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
  tlsTemplate = await templateFor(t, { protocol: "vmess", network: "ws", tls: true });
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

const api = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) =>
  request(t, method, url, payload);
const inboundsOf = (server: string) => `/api/servers/${server}/inbounds`;
const UNKNOWN = "00000000-0000-4000-8000-000000000000";

describe("creating inbounds", needs, () => {
  test("on a core that is down the inbound is stored 'pending' with the reason, within the core deadline", async () => {
    const port = await freePort();
    const started = Date.now();
    const res = await api("POST", inboundsOf(downServer), { template_id: plainTemplate.id, port });
    assert.ok(Date.now() - started < 3 * TIMEOUT_MS, `took ${Date.now() - started} ms`);
    assert.equal(res.statusCode, 201, res.body);
    const inbound = res.json();
    assert.deepEqual(Object.keys(inbound).sort(), [
      "certificate_id",
      "created_at",
      "id",
      "is_active",
      "port_override",
      "server_id",
      "sync_error",
      "sync_state",
      "tag",
      "template_id",
      "template_name",
      "updated_at",
      "variable_values",
    ]);
    assert.equal(inbound.server_id, downServer);
    assert.equal(inbound.template_name, plainTemplate.name);
    assert.equal(inbound.port_override, port);
    assert.equal(inbound.is_active, true);
    assert.equal(inbound.certificate_id, null);
    assert.deepEqual(inbound.variable_values, {});
    assert.equal(inbound.sync_state, "pending");
    assert.match(inbound.sync_error, /unavailable|refused|connect/i);
    assert.deepEqual((await api("GET", `${inboundsOf(downServer)}/${inbound.id}`)).json(), inbound);
    const list = (await api("GET", inboundsOf(downServer))).json() as { id: string }[];
    assert.ok(list.some((item) => item.id === inbound.id));
  });

  test("the generated tag is `<template slug>-<port>`, suffixed when taken; an inactive inbound is 'synced' at once", async () => {
    const port = await freePort();
    const slug = plainTemplate.name.toLowerCase().replace(/[^a-z0-9]+/g, "-");
    const first = await createInbound(t, downServer, {
      template_id: plainTemplate.id,
      port: await freePort(),
      tag: `${slug}-${port}`,
      is_active: false,
    });
    assert.equal(first.sync_state, "synced");
    const second = await createInbound(t, downServer, { template_id: plainTemplate.id, port });
    assert.equal(second.tag, `${slug}-${port}-2`);
  });

  test("a port or tag another inbound of the server uses is 409 port_taken / tag_taken; the API tag is taken", async () => {
    const existing = await createInbound(t, downServer, {
      template_id: plainTemplate.id,
      port: await freePort(),
    });
    const samePort = await api("POST", inboundsOf(downServer), {
      template_id: plainTemplate.id,
      port: existing.port_override,
    });
    expectProblem(samePort, 409, "port_taken");
    const sameTag = await api("POST", inboundsOf(downServer), {
      template_id: plainTemplate.id,
      port: await freePort(),
      tag: existing.tag,
    });
    expectProblem(sameTag, 409, "tag_taken");
    for (const tag of ["api", "api-in"]) {
      const reserved = await api("POST", inboundsOf(downServer), {
        template_id: plainTemplate.id,
        port: await freePort(),
        tag,
      });
      expectProblem(reserved, 409, "tag_taken");
    }
    // The same port on another server is fine.
    const other = await registerServer(t, await freePort());
    await createInbound(t, other.id, { template_id: plainTemplate.id, port: existing.port_override });
  });

  test("unknown server, template or certificate is 404 naming what is missing", async () => {
    const body = { template_id: plainTemplate.id, port: await freePort() };
    expectProblem(await api("POST", inboundsOf(UNKNOWN), body), 404, "not_found");
    expectProblem(await api("GET", inboundsOf(UNKNOWN)), 404, "not_found");
    const noTemplate = await api("POST", inboundsOf(downServer), { ...body, template_id: UNKNOWN });
    assert.deepEqual(expectProblem(noTemplate, 404, "not_found")[0]?.path, "body.template_id");
    const noCertificate = await api("POST", inboundsOf(downServer), { ...body, certificate_id: UNKNOWN });
    assert.deepEqual(expectProblem(noCertificate, 404, "not_found")[0]?.path, "body.certificate_id");
  });

  test("malformed ids and bodies are 400 naming the field", async () => {
    const cases: [string, unknown, string][] = [
      [inboundsOf("not-a-uuid"), { template_id: plainTemplate.id, port: 1000 }, "params.server_id"],
      [inboundsOf(downServer), { template_id: "nope", port: 1000 }, "body.template_id"],
      [inboundsOf(downServer), { template_id: plainTemplate.id, port: 0 }, "body.port"],
      [inboundsOf(downServer), { template_id: plainTemplate.id, port: 70000 }, "body.port"],
      [inboundsOf(downServer), { template_id: plainTemplate.id }, "body.port"],
      [inboundsOf(downServer), { template_id: plainTemplate.id, port: 1000, tag: "a b" }, "body.tag"],
      [inboundsOf(downServer), { template_id: plainTemplate.id, port: 1000, extra: 1 }, "body.extra"],
    ];
    for (const [url, body, path] of cases) {
      const errors = expectProblem(await api("POST", url, body), 400, "validation_failed");
      assert.ok(
        errors.some((e) => e.path === path),
        `${path} in ${JSON.stringify(errors)}`,
      );
    }
    const badInbound = await api("GET", `${inboundsOf(downServer)}/123`);
    assert.equal(expectProblem(badInbound, 400, "validation_failed")[0]?.path, "params.inbound_id");
  });

  test("a TLS template without a certificate (none given, no server default) is 422 certificate_required", async () => {
    const res = await api("POST", inboundsOf(downServer), {
      template_id: tlsTemplate.id,
      port: await freePort(),
    });
    assert.equal(expectProblem(res, 422, "certificate_required")[0]?.path, "body.certificate_id");
  });

  test("the server's default certificate is taken when none is given", async () => {
    const certificate = await apiCertificate(t, stack.add, "vpn.example.com");
    const server = await registerServer(t, await freePort(), { default_certificate_id: certificate.id });
    const inbound = await createInbound(t, server.id, {
      template_id: tlsTemplate.id,
      port: await freePort(),
    });
    assert.equal(inbound.certificate_id, certificate.id);
  });

  test("variable values of the wrong type or not in the template are 422 invalid_inbound", async () => {
    const port = await freePort();
    const wrongType = await api("POST", inboundsOf(downServer), {
      template_id: plainTemplate.id,
      port,
      variable_values: { ws_path: 42 },
    });
    const errors = expectProblem(wrongType, 422, "invalid_inbound");
    assert.equal(errors[0]?.path, "variable_values.ws_path");
    const unknown = await api("POST", inboundsOf(downServer), {
      template_id: plainTemplate.id,
      port,
      variable_values: { nope: "x" },
    });
    assert.equal(expectProblem(unknown, 422, "invalid_inbound")[0]?.path, "variable_values.nope");
    const badPath = await api("POST", inboundsOf(downServer), {
      template_id: plainTemplate.id,
      port,
      variable_values: { ws_path: "no-slash" },
    });
    assert.match(expectProblem(badPath, 422, "invalid_inbound")[0]?.path ?? "", /^config\.streamSettings/);
    const list = (await api("GET", inboundsOf(downServer))).json() as { port_override: number }[];
    assert.ok(!list.some((inbound) => inbound.port_override === port), "nothing was stored");
  });

  test("a template the server's core cannot run is 422 core_unsupported, before anything is sent", async () => {
    const reality = await createTemplate(t, realityTemplate());
    const res = await api("POST", inboundsOf(coreServer), {
      template_id: reality.id,
      port: await freePort(),
    });
    expectProblem(res, 422, "core_unsupported");
    assert.ok(core.isAlive());
    // Where the flavor is unknown (core down), a template that builds on some core is accepted, pending.
    const pending = await createInbound(t, downServer, { template_id: reality.id, port: await freePort() });
    assert.equal(pending.sync_state, "pending");
  });

  test("on a reachable core the inbound is 'synced' and the server's flavor is learned", async () => {
    const inbound = await createInbound(t, coreServer, {
      template_id: plainTemplate.id,
      port: await freePort(),
    });
    assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
    assert.equal(inbound.sync_error, null);
    assert.equal((await api("GET", `/api/servers/${coreServer}`)).json().core, "v2ray");
    assert.ok(core.isAlive());
  });
});

describe("updating and deleting inbounds", needs, () => {
  test("PUT changes the fields present and applies the inbound again", async () => {
    const inbound = await createInbound(t, coreServer, {
      template_id: plainTemplate.id,
      port: await freePort(),
    });
    const port = await freePort();
    const res = await api("PUT", `${inboundsOf(coreServer)}/${inbound.id}`, {
      tag: "renamed-inbound",
      port_override: port,
      variable_values: { ws_path: "/elsewhere" },
    });
    assert.equal(res.statusCode, 200, res.body);
    const updated = res.json();
    assert.equal(updated.tag, "renamed-inbound");
    assert.equal(updated.port_override, port);
    assert.deepEqual(updated.variable_values, { ws_path: "/elsewhere" });
    assert.equal(updated.sync_state, "synced", updated.sync_error);
    assert.ok(updated.updated_at >= String(inbound.created_at));
    const deactivated = (
      await api("PUT", `${inboundsOf(coreServer)}/${inbound.id}`, { is_active: false })
    ).json();
    assert.equal(deactivated.is_active, false);
    assert.equal(deactivated.sync_state, "synced");
    assert.ok(core.isAlive());
  });

  test("a refused update changes nothing; conflicts are 409; unknown ids 404", async () => {
    const a = await createInbound(t, downServer, { template_id: plainTemplate.id, port: await freePort() });
    const b = await createInbound(t, downServer, { template_id: plainTemplate.id, port: await freePort() });
    const url = `${inboundsOf(downServer)}/${b.id}`;
    expectProblem(await api("PUT", url, { variable_values: { ws_path: 1 } }), 422, "invalid_inbound");
    expectProblem(await api("PUT", url, { port_override: a.port_override }), 409, "port_taken");
    expectProblem(await api("PUT", url, { tag: a.tag }), 409, "tag_taken");
    const unchanged = (await api("GET", url)).json();
    assert.equal(unchanged.port_override, b.port_override);
    assert.equal(unchanged.tag, b.tag);
    expectProblem(
      await api("PUT", `${inboundsOf(downServer)}/${UNKNOWN}`, { is_active: false }),
      404,
      "not_found",
    );
    // An inbound is found only under its own server.
    expectProblem(await api("GET", `${inboundsOf(coreServer)}/${b.id}`), 404, "not_found");
  });

  test("DELETE is 204, takes the grants with it, and a second DELETE is 404", async () => {
    const inbound = await createInbound(t, downServer, {
      template_id: plainTemplate.id,
      port: await freePort(),
    });
    const access = await grant(t, downServer, inbound.id, { name: "goes with the inbound" });
    const res = await api("DELETE", `${inboundsOf(downServer)}/${inbound.id}`);
    assert.equal(res.statusCode, 204);
    assert.deepEqual((await api("GET", `/api/users/${access.user_id}/access`)).json(), []);
    expectProblem(await api("DELETE", `${inboundsOf(downServer)}/${inbound.id}`), 404, "not_found");
  });

  test("a template or certificate in use by an inbound cannot be deleted (409)", async () => {
    const template = await createTemplate(t, kindTemplate({ protocol: "trojan", network: "tcp", tls: true }));
    const certificate = await apiCertificate(t, stack.add, "in-use.example.com");
    const inbound = await createInbound(t, downServer, {
      template_id: template.id,
      port: await freePort(),
      certificate_id: certificate.id,
      tag: `in-use-${randomUUID().slice(0, 8)}`,
    });
    expectProblem(await api("DELETE", `/api/templates/${template.id}`), 409, "template_in_use");
    const inUse = await api("DELETE", `/api/certificates/${certificate.id}`);
    expectProblem(inUse, 409, "certificate_in_use");
    assert.match(inUse.json().detail, new RegExp(`inbound ${inbound.tag} on server nobody listens`));
    assert.equal((await api("DELETE", `${inboundsOf(downServer)}/${inbound.id}`)).statusCode, 204);
    assert.equal((await api("DELETE", `/api/certificates/${certificate.id}`)).statusCode, 204);
    assert.equal((await api("DELETE", `/api/templates/${template.id}`)).statusCode, 204);
  });
});
