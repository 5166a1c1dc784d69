// Xray upgraded in place under a running Portcullis: the same address, the core restarted as a
// release with other field numbers (25.9 -> 26.x renumbered ReceiverConfig). The reconciler asks
// the new process its wire layout, stores it and re-applies every inbound and grant in the new
// layout, without operator action. The stand-in core decodes like the release it pretends to be,
// so inbounds applied with the old numbers would come up without their TLS/REALITY and fail here.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp, testLogger } from "../../../test/support/app.ts";
import { startConvergence } from "../../../test/support/convergence.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { apiCertificate, createInbound, grant, registerServer } from "../../../test/support/provisioning.ts";
import { type RecordingXray, startRecordingXray } from "../../../test/support/recording-grpc.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import { installStarters, STARTER_NAMES } from "../templates/starters.ts";

const stack = new CleanupStack();
let t: TestApp;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1500" });
});
after(async () => {
  await t.close();
  await stack.run();
});

/** Every starter inbound on the core with its one user, stream settings where the starter has them. */
function holdsEverything(
  xray: RecordingXray,
  tags: Map<string, string>,
  emails: Map<string, string>,
): boolean {
  if (xray.inbounds.size !== tags.size) return false;
  for (const [tag, starter] of tags) {
    const inbound = xray.inbounds.get(tag);
    if (inbound === undefined || !inbound.users.has(emails.get(tag) ?? "")) return false;
    const hasStream = inbound.receiver?.streamSettings?.securityType !== undefined;
    if (hasStream !== !starter.startsWith("shadowsocks")) return false;
  }
  return true;
}

describe("a core upgraded in place is re-detected and re-applied", () => {
  test("Xray 25.9 -> 26.x at the same address: every starter inbound and grant back in the 25.10 layout", async () => {
    const xray = await startRecordingXray(stack.add, { release: "25.9.5" });
    const certificate = await apiCertificate(t, stack.add, "vpn.example.com");
    const server = await registerServer(t, Number(xray.address.split(":")[1]), {
      default_certificate_id: certificate.id,
    });
    const tested = (await request(t, "POST", `/api/servers/${server.id}/test`)).json();
    assert.deepEqual([tested.wire_layout, tested.core_capabilities], ["xray-25.1", ["listing"]]);

    await installStarters(t.deps.services.templates);
    const user = (await request(t, "POST", "/api/users", { name: "Upgrade Watcher" })).json();
    const tags = new Map<string, string>();
    const emails = new Map<string, string>();
    for (const template of await t.deps.services.templates.list()) {
      const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
      const access = await grant(t, server.id, inbound.id, { user_id: user.id });
      assert.deepEqual([inbound.sync_state, access.sync_state], ["synced", "synced"], template.name);
      tags.set(inbound.tag, template.name);
      emails.set(inbound.tag, access.proxy_user_id);
    }
    assert.equal(tags.size, STARTER_NAMES.length);
    assert.ok(holdsEverything(xray, tags, emails), "applied in the 25.1 layout on the 25.9 core");

    const { running } = startConvergence(t.deps, testLogger(), { reconcileMs: 200 });
    stack.add(() => running.stop());
    await waitFor(
      async () => (await t.deps.services.reconciler.state(server.id)).appliedWireLayout === "xray-25.1",
      {
        what: "the first full reconcile records the layout it applied",
      },
    );

    await xray.restart("26.5.10");
    await waitFor(() => holdsEverything(xray, tags, emails), {
      timeoutMs: 15_000,
      what: "everything back on 26.x",
    });

    const stored = (await request(t, "GET", `/api/servers/${server.id}`)).json();
    assert.deepEqual(
      [stored.wire_layout, stored.wire_layout_pinned, stored.core_capabilities, stored.status],
      ["xray-25.10", false, ["listing", "online_users"], "online"],
    );
    await waitFor(
      async () => (await t.deps.services.reconciler.state(server.id)).appliedWireLayout === "xray-25.10",
      {
        what: "the re-apply recorded under the new layout",
      },
    );
    const grants = await t.deps.database.db
      .selectFrom("user_access")
      .select("sync_state")
      .where("server_id", "=", server.id)
      .execute();
    assert.deepEqual(
      grants.map((row) => row.sync_state),
      Array(STARTER_NAMES.length).fill("synced"),
    );
    assert.equal(xray.panic, null);
  });
});
