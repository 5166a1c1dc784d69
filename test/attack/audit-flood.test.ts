// A refused write must not grow the audit log without bound (issue 45, finding 7): one request with
// 40,000 body keys once made a 720 KB entry. An entry now keeps at most 32 field names, each cut to
// 64 characters, and the count of the rest — and every valid body of the API still fits whole.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { FIELD_NAME_CHARS, MAX_FIELDS } from "../../src/features/audit/audit-hooks.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type JsonSchema, operationsOf } from "../support/openapi-ops.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

type Entry = { action: string; status: number; fields: string[] | null; targets: Record<string, string> };

describe("what an audit entry keeps of a refused write is bounded", () => {
  test("a 40,000-key body is refused and its entry holds 32 names and the count of the rest", async () => {
    const body: Record<string, number> = {};
    for (let i = 0; i < 40_000; i++) body[`field_${String(i).padStart(6, "0")}`] = i;
    body[`${"long".repeat(100)}`] = 1;
    const payload = JSON.stringify(body);
    assert.ok(payload.length > 700_000, `${payload.length} bytes`);
    const res = await t.app.inject({
      method: "POST",
      url: "/api/users",
      headers: { ...t.auth, "content-type": "application/json" },
      payload,
    });
    assert.equal(res.statusCode, 400, res.body);

    const log = await t.app.inject({ url: "/api/audit?action=users.create&per_page=5", headers: t.auth });
    const entry = (log.json().items as Entry[])[0];
    assert.ok(entry !== undefined);
    assert.equal(entry.status, 400);
    assert.equal(entry.fields?.length, MAX_FIELDS);
    assert.equal(entry.targets.fields_omitted, String(40_001 - MAX_FIELDS));
    const size = JSON.stringify(entry).length;
    console.log(`audit entry of a 40,001-key refused body: ${size} bytes (${payload.length} bytes sent)`);
    assert.ok(size < 4096, `${size} bytes`);
  });

  test("a field name is kept to 64 characters", async () => {
    const name = `k${"y".repeat(500)}`;
    const res = await t.app.inject({
      method: "PUT",
      url: "/api/subscription-settings",
      headers: t.auth,
      payload: { [name]: 1 },
    });
    assert.equal(res.statusCode, 400, res.body);
    const log = await t.app.inject({ url: "/api/audit?per_page=1", headers: t.auth });
    const entry = (log.json().items as Entry[])[0];
    assert.deepEqual(entry?.fields, [name.slice(0, FIELD_NAME_CHARS)]);
    assert.equal(entry?.targets.fields_omitted, undefined);
  });

  test("every request body the API accepts fits: no schema has more fields or longer names", async () => {
    const doc = (await t.app.inject({ url: "/api/openapi.json" })).json();
    const widest = { count: 0, name: 0 };
    for (const op of operationsOf(doc)) {
      const names = Object.keys(resolve(doc, op.body)?.properties ?? {});
      widest.count = Math.max(widest.count, names.length);
      for (const n of names) widest.name = Math.max(widest.name, n.length);
    }
    assert.ok(widest.count > 5 && widest.count <= MAX_FIELDS, `widest body: ${widest.count} fields`);
    assert.ok(widest.name <= FIELD_NAME_CHARS, `longest field name: ${widest.name}`);
  });
});

function resolve(doc: { components?: { schemas?: Record<string, JsonSchema> } }, schema?: JsonSchema) {
  const ref = schema?.$ref;
  if (ref === undefined) return schema;
  return doc.components?.schemas?.[ref.replace("#/components/schemas/", "")];
}
