// Health in subscriptions (issue 47, layer 7), on whichever dialect DATABASE_URL selects: a real
// v2ray core is stopped, /test finds it offline, and its entries stay in /sub until the setting's
// minutes have passed (the subscription-health job run with a clock that far ahead), then leave every
// format; a server whose core stays up keeps its entry throughout. The core back and /test online:
// the entries return at once (migration 0024's trigger clears the flag, the change feed tells the
// cache). The setting off brings them back while the server is still offline.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestApp, type TestApp, testLogger } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../../../test/support/v2ray.ts";
import { subscriptionHealthJob } from "../../jobs/subscription-health.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
let t: TestApp;
let core: V2rayServer;
let deadId: string;
let user: { id: string; subscription_url: string };

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "2000" });
  core = await startV2rayServer(stack.add);
  deadId = (
    await registerServer(t, core.apiPort, {
      name: "Dies",
      hostname: "dies.example.com",
      grpc_hostname: "127.0.0.1",
    })
  ).id;
  // A second core that stays up: its entry stays throughout.
  const other = await startV2rayServer(stack.add);
  const otherId = (
    await registerServer(t, other.apiPort, {
      name: "Stays",
      hostname: "stays.example.com",
      grpc_hostname: "127.0.0.1",
    })
  ).id;
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  user = (
    await request(t, "POST", "/api/users", { name: "carol", data_limit_bytes: 2 ** 30 })
  ).json() as typeof user;
  for (const serverId of [deadId, otherId]) {
    const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
    await grant(t, serverId, inbound.id, { user_id: user.id });
  }
});
needs.after(async () => {
  await t?.close();
  await stack.run();
});

const FORMATS = ["links", "mihomo", "sing-box", "xray-json"] as const;

/** The server addresses a format's entries point at, sorted. */
async function addresses(format: (typeof FORMATS)[number]): Promise<string[]> {
  const res = await t.app.inject({ method: "GET", url: `${user.subscription_url}/${format}` });
  assert.equal(res.statusCode, 200, res.body);
  if (format === "links") {
    return res.body
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"))
      .map((line) => decodeLink(line).host)
      .sort();
  }
  if (format === "mihomo") return [...res.body.matchAll(/server: "([^"]+)"/g)].map((m) => m[1] ?? "").sort();
  if (format === "sing-box") {
    const doc = JSON.parse(res.body) as { outbounds: { type: string; server?: string }[] };
    return doc.outbounds.flatMap((o) => (o.type === "vless" && o.server ? [o.server] : [])).sort();
  }
  const configs = JSON.parse(res.body) as { outbounds: { settings?: { vnext?: { address: string }[] } }[] }[];
  return configs.flatMap((c) => c.outbounds[0]?.settings?.vnext?.map((v) => v.address) ?? []).sort();
}

const BOTH = ["dies.example.com", "stays.example.com"];
const ONLY = ["stays.example.com"];

/** Every format shows `want`: writes outside the API reach the cache through the change feed. */
async function expectEverywhere(want: string[]): Promise<void> {
  await waitFor(
    async () => {
      await t.deps.services.subscriptions.catchUp();
      for (const format of FORMATS) {
        if (JSON.stringify(await addresses(format)) !== JSON.stringify(want)) return false;
      }
      return true;
    },
    { timeoutMs: 15_000, what: `entries ${want.join(", ")} in every format` },
  );
}

/** POST /test until it finds the core as `connected` (the gRPC client reconnects with backoff). */
async function serverTest(connected: boolean): Promise<void> {
  await waitFor(
    async () => {
      const res = await request(t, "POST", `/api/servers/${deadId}/test`);
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as { connected: boolean }).connected === connected;
    },
    { timeoutMs: 20_000, what: `/test connected: ${connected}` },
  );
}

function runJobAt(offsetMinutes: number) {
  const job = subscriptionHealthJob(
    t.deps.services.servers,
    t.deps.services.subscriptionSettings,
    testLogger(),
    1000,
    () => new Date(Date.now() + offsetMinutes * 60_000),
  );
  return job.run({ signal: new AbortController().signal });
}

describe("servers offline for longer than the setting's minutes leave /sub", needs, () => {
  test("the default is on, 10 minutes", async () => {
    const res = await request(t, "GET", "/api/subscription-settings");
    const body = res.json() as { leave_out_offline_servers: boolean; offline_minutes: number };
    assert.equal(body.leave_out_offline_servers, true);
    assert.equal(body.offline_minutes, 10);
  });

  test("offline → kept for N minutes → left out → back online → returns", async () => {
    await serverTest(true);
    await expectEverywhere(BOTH);
    await core.kill("SIGKILL");
    await serverTest(false);
    const row = await t.deps.database.db
      .selectFrom("servers")
      .select(["status", "offline_since"])
      .where("id", "=", deadId)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, "offline");
    assert.ok(row.offline_since !== null, "the trigger noted when it went offline");
    // Not yet: 9 minutes later is still within the 10.
    await runJobAt(9);
    await t.deps.services.subscriptions.catchUp();
    for (const format of FORMATS) assert.deepEqual(await addresses(format), BOTH, format);
    await runJobAt(11);
    await expectEverywhere(ONLY);
    // Still offline, the job again: nothing changes (it stays out).
    await runJobAt(12);
    await expectEverywhere(ONLY);
    await core.restart();
    await serverTest(true);
    // Back at once: no job run needed, the status trigger cleared the flag.
    await expectEverywhere(BOTH);
    // The job with the clock far ahead leaves an online server alone.
    await runJobAt(60);
    await expectEverywhere(BOTH);
  });

  test("turning the setting off brings the entries back while the server is still offline", async () => {
    await core.kill("SIGKILL");
    await serverTest(false);
    await runJobAt(11);
    await expectEverywhere(ONLY);
    const off = await request(t, "PUT", "/api/subscription-settings", { leave_out_offline_servers: false });
    assert.equal(off.statusCode, 200, off.body);
    await runJobAt(11);
    await expectEverywhere(BOTH);
    // Raising the minutes also brings them back; lowering leaves them out again.
    const on = await request(t, "PUT", "/api/subscription-settings", {
      leave_out_offline_servers: true,
      offline_minutes: 30,
    });
    assert.equal(on.statusCode, 200, on.body);
    await runJobAt(11);
    await expectEverywhere(BOTH);
    await runJobAt(31);
    await expectEverywhere(ONLY);
    const bad = await request(t, "PUT", "/api/subscription-settings", { offline_minutes: 0 });
    assert.equal(bad.statusCode, 400, bad.body);
    await core.restart();
    await serverTest(true);
    await expectEverywhere(BOTH);
  });
});
