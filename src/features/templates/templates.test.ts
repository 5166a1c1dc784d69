// The templates API on whichever dialect DATABASE_URL selects: create, read, update, delete and
// their error codes. Save-time validation is in templates-validation.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import {
  createTemplate,
  expectProblem,
  realityTemplate,
  request,
  wsTemplate,
} from "../../../test/support/templates.ts";
import { buildApp } from "../../app.ts";
import { EventBus } from "../../lib/events.ts";
import { TemplatesRepository } from "./templates.repository.ts";
import { TemplatesService } from "./templates.service.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

const api = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) =>
  request(t, method, url, payload);
const create = (body: Record<string, unknown>) => createTemplate(t, body);

describe("creating and reading templates", () => {
  test("create returns 201 with the facts read from the config; get and list return it", async () => {
    const body = wsTemplate();
    const template = await create(body);
    assert.equal(template.name, body.name);
    assert.deepEqual(template.config, body.config);
    assert.deepEqual(template.variables, [
      { name: "ws_path", description: "WebSocket path", default: "/ws", required: false },
    ]);
    assert.deepEqual(template.supported_cores, ["xray", "v2ray"]);
    assert.equal(template.protocol, "vmess");
    assert.equal(template.security, "tls");
    assert.equal(template.network, "ws");
    assert.equal(template.needs_certificate, true);
    assert.equal(template.uses_reality, false);
    assert.equal(template.client_flow, "");
    assert.equal(template.created_at, template.updated_at);
    assert.deepEqual((await api("GET", `/api/templates/${template.id}`)).json(), template);
    const list = (await api("GET", "/api/templates")).json() as { id: string }[];
    assert.ok(list.some((item) => item.id === template.id));
  });

  test("a REALITY template is supported only on xray; its list variable fills serverNames", async () => {
    const template = await create(realityTemplate());
    assert.deepEqual(template.supported_cores, ["xray"]);
    assert.equal(template.uses_reality, true);
    assert.equal(template.needs_certificate, false);
    assert.equal(template.security, "reality");
    assert.equal(template.client_flow, "xtls-rprx-vision");
  });

  test("variables get defaults: empty description, null default, not required", async () => {
    const template = await create(
      wsTemplate({
        config: { ...(wsTemplate().config as object), listen: "{{addr}}" },
        variables: [
          { name: "ws_path", default: "/a" },
          { name: "addr", default: "0.0.0.0", required: true },
        ],
      }),
    );
    assert.deepEqual(template.variables[0], {
      name: "ws_path",
      description: "",
      default: "/a",
      required: false,
    });
  });

  test("an unknown id is 404, a malformed one 400", async () => {
    expectProblem(await api("GET", "/api/templates/00000000-0000-4000-8000-000000000000"), 404, "not_found");
    const errors = expectProblem(await api("GET", "/api/templates/nope"), 400, "validation_failed");
    assert.equal(errors[0]?.path, "params.id");
  });

  test("a body without config, with a non-object config or an unknown field is 400", async () => {
    for (const [body, path] of [
      [{ name: "x" }, "body.config"],
      [{ name: "x", config: [] }, "body.config"],
      [{ ...wsTemplate(), color: "red" }, "body.color"],
      [{ ...wsTemplate(), client_flow: "xtls-rprx-direct" }, "body.client_flow"],
    ] as const) {
      const errors = expectProblem(await api("POST", "/api/templates", body), 400, "validation_failed");
      assert.ok(
        errors.some((e) => e.path === path),
        JSON.stringify(errors),
      );
    }
  });

  test("a second template with the same name is 409 template_name_taken", async () => {
    const first = await create(wsTemplate());
    expectProblem(
      await api("POST", "/api/templates", wsTemplate({ name: first.name })),
      409,
      "template_name_taken",
    );
  });

  test("two creates racing for one name: one 201, the other 409 template_name_taken", async () => {
    const body = wsTemplate();
    const results = await Promise.all([1, 2, 3].map(() => api("POST", "/api/templates", body)));
    const statuses = results.map((res) => res.statusCode).sort();
    assert.deepEqual(statuses, [201, 409, 409]);
    for (const res of results.filter((r) => r.statusCode === 409)) {
      expectProblem(res, 409, "template_name_taken");
    }
  });
});

describe("updating templates", () => {
  test("PUT changes only the fields present and keeps the rest", async () => {
    const template = await create(wsTemplate());
    const res = await api("PUT", `/api/templates/${template.id}`, { description: "new words" });
    assert.equal(res.statusCode, 200);
    const updated = res.json();
    assert.equal(updated.description, "new words");
    assert.deepEqual(updated.config, template.config);
    assert.deepEqual(updated.variables, template.variables);
    assert.ok(updated.updated_at >= template.updated_at);
  });

  test("a new config is validated again and the facts follow it; a failing one changes nothing", async () => {
    const template = await create(wsTemplate());
    const reality = realityTemplate();
    const res = await api("PUT", `/api/templates/${template.id}`, {
      config: reality.config,
      variables: reality.variables,
      client_flow: "xtls-rprx-vision",
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().supported_cores, ["xray"]);
    assert.equal(res.json().protocol, "vless");
    const bad = await api("PUT", `/api/templates/${template.id}`, { variables: [] });
    expectProblem(bad, 422, "template_invalid");
    assert.deepEqual((await api("GET", `/api/templates/${template.id}`)).json(), res.json());
  });

  test("renaming onto a taken name is 409; an unknown id is 404", async () => {
    const a = await create(wsTemplate());
    const b = await create(wsTemplate());
    expectProblem(await api("PUT", `/api/templates/${b.id}`, { name: a.name }), 409, "template_name_taken");
    assert.equal((await api("PUT", `/api/templates/${a.id}`, { name: ` ${a.name} ` })).statusCode, 200);
    expectProblem(
      await api("PUT", "/api/templates/00000000-0000-4000-8000-000000000002", { description: "x" }),
      404,
      "not_found",
    );
  });
});

describe("deleting templates", () => {
  test("delete is 204, then the template is gone; deleting again is 404", async () => {
    const template = await create(wsTemplate());
    const res = await api("DELETE", `/api/templates/${template.id}`);
    assert.equal(res.statusCode, 204);
    assert.equal(res.body, "");
    assert.equal((await api("GET", `/api/templates/${template.id}`)).statusCode, 404);
    expectProblem(await api("DELETE", `/api/templates/${template.id}`), 404, "not_found");
  });

  test("a template that inbounds use cannot be deleted: 409 template_in_use", async () => {
    const template = await create(wsTemplate());
    const inUse = new TemplatesService(
      new TemplatesRepository(t.deps.database.db),
      { countByTemplate: async (id) => (id === template.id ? 2 : 0) },
      new EventBus(),
    );
    const app = await buildApp(
      { ...t.deps, services: { ...t.deps.services, templates: inUse } },
      { docsUi: false },
    );
    try {
      const res = await app.inject({
        method: "DELETE",
        url: `/api/templates/${template.id}`,
        headers: t.auth,
      });
      expectProblem(res, 409, "template_in_use");
    } finally {
      await app.close();
    }
    assert.equal((await api("GET", `/api/templates/${template.id}`)).statusCode, 200);
  });
});
