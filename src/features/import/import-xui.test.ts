// `portcullis import 3x-ui` (issue 51) with a 1,000-client x-ui.db (test/support/peer-fixtures.ts)
// against a real V2Ray core, on whichever dialect DATABASE_URL selects: one user per subId, the
// clients' credentials unchanged on the inbounds the core takes, the report's counts, a second run
// that changes nothing, and 3x-ui's /sub/{subId} and /json/{subId} answering (unknown subIds 404).
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { writeXuiSqlite } from "../../../test/support/peer-fixtures.ts";
import { freePort } from "../../../test/support/ports.ts";
import { registerServer } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack, startV2rayServer, tempDir } from "../../../test/support/v2ray.ts";
import { run } from "../../cli/import.ts";
import { loadSqlite } from "../../db/connection.ts";
import type { ImportReport } from "./import.service.ts";

const needs = requires("v2ray");
const N = 1000;
const stack = new CleanupStack();
let t: TestApp;
let serverId: string;
let dbPath: string;
const clients: { protocol: string; id?: string; password?: string; subId: string }[] = [];

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "5000" });
  const core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort)).id;
  dbPath = join(tempDir(stack.add), "x-ui.db");
  writeXuiSqlite(dbPath, N);
  const db = new (loadSqlite())(dbPath);
  try {
    for (const row of db.prepare("SELECT id, protocol, settings FROM inbounds").all() as {
      id: number;
      protocol: string;
      settings: string;
    }[]) {
      db.prepare("UPDATE inbounds SET port = ? WHERE id = ?").run(await freePort(), row.id);
      for (const c of JSON.parse(row.settings).clients) clients.push({ ...c, protocol: row.protocol });
    }
  } finally {
    db.close();
  }
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

async function importOnce(): Promise<ImportReport> {
  let out = "";
  let err = "";
  const code = await run(["3x-ui", "--db", dbPath, "--server", serverId, "--json"], {
    deps: t.deps,
    write: (text) => {
      out += text;
    },
    writeError: (text) => {
      err += text;
    },
  });
  assert.equal(code, 0, `${out}${err}`);
  return JSON.parse(out) as ImportReport;
}

describe("portcullis import 3x-ui", needs, () => {
  test("one user per subId with the clients' credentials; again, nothing changes; old URLs answer", async () => {
    const report = await importOnce();
    assert.equal(report.users.found, N);
    assert.equal(report.users.created, N);
    const db = t.deps.database.db;
    const grants = await db
      .selectFrom("user_access as a")
      .innerJoin("import_links as l", "l.user_id", "a.user_id")
      .select(["a.credential", "l.key"])
      .execute();
    const bySub = new Map(grants.map((g) => [g.key, g.credential]));
    let carried = 0;
    for (const client of clients) {
      const held = bySub.get(client.subId);
      if (held === undefined) continue;
      assert.equal(held, client.id ?? client.password, client.subId);
      carried++;
    }
    assert.equal(carried, report.grants.created, "every stored grant holds its client's credential");
    assert.equal(report.grants.created + report.grants.left_out, N);
    const again = await importOnce();
    assert.equal(again.users.created, 0);
    assert.equal(again.grants.created, 0);
    assert.equal(again.users.already, N);

    const active = new Set(
      (
        await db
          .selectFrom("import_links as l")
          .innerJoin("users as u", "u.id", "l.user_id")
          .select("l.key")
          .where("u.status", "=", "active")
          .execute()
      ).map((row) => row.key),
    );
    const withGrant = clients.find(
      (c) => c.protocol !== "vmess" && bySub.has(c.subId) && active.has(c.subId),
    );
    assert.ok(withGrant !== undefined, JSON.stringify(report.left_out));
    const sub = await t.app.inject({
      method: "GET",
      url: `/sub/${withGrant.subId}`,
      headers: { "user-agent": "v2rayNG/1.8.5" },
    });
    assert.equal(sub.statusCode, 200, sub.body);
    assert.ok(
      Buffer.from(sub.body, "base64")
        .toString("utf8")
        .includes(String(withGrant.id ?? withGrant.password)),
    );
    const json = await t.app.inject({ method: "GET", url: `/json/${withGrant.subId}` });
    assert.equal(json.statusCode, 200, json.body);
    assert.ok(json.body.includes(String(withGrant.id ?? withGrant.password)));
    assert.equal((await t.app.inject({ method: "GET", url: "/sub/nosuchsubid0000" })).statusCode, 404);
    assert.equal((await t.app.inject({ method: "GET", url: "/json/nosuchsubid0000" })).statusCode, 404);
  });
});
