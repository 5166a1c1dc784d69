// A server's grants as a reconcile reads them (listByServer, listUnsyncedByServer), on whichever
// dialect DATABASE_URL selects: the sync columns and nothing else (a full apply holds 60,000 of these
// per server), each value as stored, the user's admission, and only this server's grants; read in
// pages, every grant once, also when grants come and go between two pages.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { request } from "../../../test/support/templates.ts";
import { AccessRepository, type GrantPaging } from "./access.repository.ts";

let t: TestApp;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "300" });
});
after(async () => {
  await t?.close();
});

const SYNC_KEYS = [
  "credential",
  "id",
  "is_active",
  "is_user_admitted",
  "level",
  "proxy_user_id",
  "server_id",
  "server_inbound_id",
  "sync_error",
  "sync_revision",
  "sync_state",
  "user_id",
];

async function newUser(name: string): Promise<string> {
  const res = await request(t, "POST", "/api/users", { name });
  assert.equal(res.statusCode, 201, res.body);
  return (res.json() as { id: string }).id;
}

/** A server whose core does not answer (its grants stay pending) with `inbounds` VLESS inbounds. */
async function serverWith(inbounds: number) {
  const server = await registerServer(t, await freePort());
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  const ids: string[] = [];
  for (let i = 0; i < inbounds; i++) {
    ids.push((await createInbound(t, server.id, { template_id: template.id, port: await freePort() })).id);
  }
  return { id: server.id, inbounds: ids };
}

describe("a server's grants read for a reconcile", () => {
  test("carry the sync columns as stored, the user's admission, and only this server's grants", async () => {
    const server = await serverWith(2);
    const other = await serverWith(1);
    const users = [await newUser("reader-a"), await newUser("reader-b"), await newUser("reader-c")];
    for (const userId of users)
      for (const inboundId of server.inbounds) await grant(t, server.id, inboundId, { user_id: userId });
    await grant(t, other.id, other.inbounds[0] as string, { user_id: users[0] });
    const disabled = await request(t, "PUT", `/api/users/${users[2]}`, { status: "disabled" });
    assert.equal(disabled.statusCode, 200, disabled.body);
    const db = t.deps.database.db;
    const first = await db
      .selectFrom("user_access")
      .select("id")
      .where("user_id", "=", users[0] as string)
      .where("server_id", "=", server.id)
      .orderBy("id")
      .executeTakeFirstOrThrow();
    await db
      .updateTable("user_access")
      .set({ sync_state: "synced", sync_error: null })
      .where("id", "=", first.id)
      .execute();

    const repository = new AccessRepository(db);
    const rows = await repository.listByServer(server.id);
    assert.equal(rows.length, 6);
    const stored = await db
      .selectFrom("user_access")
      .selectAll()
      .where("server_id", "=", server.id)
      .execute();
    for (const row of rows) {
      assert.deepEqual(Object.keys(row).sort(), SYNC_KEYS);
      const want = stored.find((s) => s.id === row.id);
      assert.ok(want !== undefined, `grant ${row.id} is the server's`);
      assert.deepEqual(
        { ...row, is_user_admitted: undefined },
        {
          id: want.id,
          user_id: want.user_id,
          server_inbound_id: want.server_inbound_id,
          server_id: server.id,
          proxy_user_id: want.proxy_user_id,
          credential: want.credential,
          level: want.level,
          is_active: true,
          sync_state: want.sync_state,
          sync_error: want.sync_error,
          sync_revision: Number(want.sync_revision),
          is_user_admitted: undefined,
        },
      );
      assert.equal(row.is_user_admitted, row.user_id !== users[2], `admission of ${row.user_id}`);
    }

    const unsynced = await repository.listUnsyncedByServer(server.id, true);
    assert.deepEqual(
      unsynced.map((row) => row.id).sort(),
      rows
        .filter((row) => row.id !== first.id)
        .map((row) => row.id)
        .sort(),
    );
    assert.ok(unsynced.every((row) => row.sync_state !== "synced"));
  });

  test("in pages, return every grant once, also when grants are added and revoked between pages", async () => {
    const server = await serverWith(1);
    const inboundId = server.inbounds[0] as string;
    const granted: { id: string; user_id: string }[] = [];
    for (let i = 0; i < 7; i++)
      granted.push(await grant(t, server.id, inboundId, { user_id: await newUser(`page-${i}`) }));
    const [readFirst, , , , , , notReadYet] = granted;
    assert.ok(readFirst !== undefined && notReadYet !== undefined);
    let added: { id: string } | undefined;
    let pages = 0;
    const revoke = async (userId: string) => {
      const res = await request(
        t,
        "DELETE",
        `/api/servers/${server.id}/inbounds/${inboundId}/users/${userId}`,
      );
      assert.equal(res.statusCode, 204, res.body);
    };
    const paging: GrantPaging = {
      grantsPerPage: 2,
      betweenPages: async () => {
        pages += 1;
        if (pages !== 1) return;
        // After the first page: one grant read already and one not read yet are revoked, one is added.
        await revoke(readFirst.user_id);
        await revoke(notReadYet.user_id);
        added = await grant(t, server.id, inboundId, { user_id: await newUser("page-added") });
      },
    };

    const rows = await new AccessRepository(t.deps.database.db, paging).listByServer(server.id);
    const ids = rows.map((row) => row.id);
    assert.ok(pages >= 3, `read in pages (${pages} turns between them)`);
    assert.equal(new Set(ids).size, ids.length, "no grant twice");
    assert.ok(added !== undefined);
    const kept = granted.filter((g) => g !== notReadYet).map((g) => g.id);
    assert.deepEqual([...ids].sort(), [...kept, added.id].sort());
  });
});
