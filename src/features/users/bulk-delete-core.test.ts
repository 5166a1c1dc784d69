// delete_expired against the real V2Ray core: users deleted in bulk have their grants taken off the
// core first, as DELETE /api/users/{id} does (the same revoker): the real client that carried traffic
// for them is refused afterwards, and a user the action leaves alone keeps carrying.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  createInbound,
  expectBlocked,
  expectCarries,
  grant,
  registerServer,
  startClient,
  subscriptionLinks,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startHttpServer, startV2rayServer } from "../../../test/support/v2ray.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
const BODY = randomBytes(20_000);
let t: TestApp;
let serverId: string;
let httpPort: number;
let templateId: string;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1500" });
  const core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort, { name: "bulk core" })).id;
  httpPort = await startHttpServer(stack.add, BODY);
  templateId = (await templateFor(t, { protocol: "vless", network: "tcp", tls: false })).id;
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

async function clientOf(userId: string): Promise<number> {
  const [link] = await subscriptionLinks(t, userId);
  assert.ok(link !== undefined, "the user has a link");
  return startClient(stack.add, "v2ray", decodeLink(link));
}

describe("bulk delete on a real core", needs, () => {
  test("delete_expired takes the deleted users' grants off the core; the others stay", async () => {
    const inbound = await createInbound(t, serverId, { template_id: templateId, port: await freePort() });
    const leaving = [
      await grant(t, serverId, inbound.id, { name: "leaving-1" }),
      await grant(t, serverId, inbound.id, { name: "leaving-2" }),
    ];
    const staying = await grant(t, serverId, inbound.id, { name: "staying" });
    const clients = [];
    for (const access of [...leaving, staying]) {
      const socks = await clientOf(access.user_id);
      await expectCarries(socks, httpPort, BODY, `before the bulk delete (${access.user_id})`);
      clients.push(socks);
    }
    // Their expiry long past, written as the lifecycle would find it (the status is not what selects).
    const longAgo = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await t.deps.database.db
      .updateTable("users")
      .set({ expire_at: longAgo })
      .where(
        "id",
        "in",
        leaving.map((a) => a.user_id),
      )
      .execute();
    const res = await request(t, "POST", "/api/users/bulk-actions", {
      action: { type: "delete_expired", expired_for_days: 30 },
      ids: [...leaving, staying].map((a) => a.user_id),
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { action: "delete_expired", matched: 3, changed: 2, status_changed: 0 });
    for (const [i, access] of leaving.entries()) {
      await expectBlocked(clients[i] as number, httpPort, BODY, `after the bulk delete (${access.user_id})`);
      assert.equal((await request(t, "GET", `/api/users/${access.user_id}/access`)).statusCode, 404);
    }
    await expectCarries(clients[2] as number, httpPort, BODY, "the user the action left alone");
  });
});
