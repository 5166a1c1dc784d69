// Device limits at fetch time (issue 50 item 1), over real HTTP with the fast path in front, on
// whichever dialect DATABASE_URL selects: a user with device_limit 2 gets the links on two HWIDs and
// a placeholder with the x-hwid-* headers on a third, until a device is deleted; concurrent first
// fetches take exactly the free places; hostile header values are refused or stored cleaned; a user
// without a limit is answered by the fast path and nothing is recorded for them.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { rawRequest } from "../../../test/support/raw-http.ts";
import { request } from "../../../test/support/templates.ts";
import { withCacheFastPath } from "../subscriptions/fast-path.ts";

let t: TestApp;
let server: Server;
let base: string;
let port: number;
let serverId: string;
let inboundId: string;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1000" });
  serverId = (await registerServer(t, await freePort(), { hostname: "vpn.example.com" })).id;
  const template = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
  inboundId = (await createInbound(t, serverId, { template_id: template.id, port: await freePort() })).id;
  server = createServer(
    withCacheFastPath(t.deps.services.subscriptions, (req, res) => t.app.routing(req, res)),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  // a webhook listening to everything: events reach the outbox (the dispatcher is not run)
  const hook = await request(t, "POST", "/api/webhooks", {
    name: "all",
    url: `http://127.0.0.1:${await freePort()}/`,
  });
  assert.equal(hook.statusCode, 201, hook.body);
});
after(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

type User = { id: string; subscription_url: string; device_limit: number | null };
type Device = {
  id: string;
  hwid: string;
  app: string | null;
  os: string | null;
  os_version: string | null;
  model: string | null;
  first_seen_at: string;
  last_seen_at: string;
};

async function newUser(body: Record<string, unknown> = {}): Promise<User> {
  const res = await request(t, "POST", "/api/users", { name: `u-${randomUUID().slice(0, 8)}`, ...body });
  assert.equal(res.statusCode, 201, res.body);
  const user = res.json() as User;
  await grant(t, serverId, inboundId, { user_id: user.id });
  return user;
}

type Fetched = { status: number; headers: Headers; links: string[] };

/** One fetch of the user's subscription as an app sends it (base64), the links decoded. */
async function fetchAs(user: User, device: Record<string, string> = {}): Promise<Fetched> {
  const res = await fetch(`${base}${user.subscription_url}/base64`, {
    headers: { "user-agent": "Happ/3.1.2", ...device },
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const links = Buffer.from(text, "base64").toString("utf8").split("\n").filter(Boolean);
  return { status: res.status, headers: res.headers, links };
}

const hwid = (id: string) => ({
  "x-hwid": id,
  "x-device-os": "Android",
  "x-ver-os": "14",
  "x-device-model": "Pixel 8",
});
/** The real entry: the inbound's host; the placeholder: 0.0.0.0:1 with the nil uuid. */
const isReal = (f: Fetched) => f.links.length === 1 && f.links[0]?.includes("vpn.example.com") === true;
const placeholderName = (f: Fetched) => {
  assert.equal(f.links.length, 1, f.links.join("\n"));
  const link = f.links[0] as string;
  assert.match(link, /^vless:\/\/00000000-0000-0000-0000-000000000000@0\.0\.0\.0:1/);
  return decodeURIComponent(link.slice(link.indexOf("#") + 1));
};

async function devicesOf(user: User): Promise<{ effective_device_limit: number; devices: Device[] }> {
  const res = await request(t, "GET", `/api/users/${user.id}/devices`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { effective_device_limit: number; devices: Device[] };
}

describe("device limits at fetch time", () => {
  test("device_limit 2 and three HWIDs: the third gets the placeholder and the headers; deleting a device lets it in", async () => {
    const user = await newUser({ device_limit: 2 });
    assert.equal(user.device_limit, 2);
    const first = await fetchAs(user, hwid("hwid-one"));
    assert.ok(isReal(first), first.links.join("\n"));
    assert.equal(first.headers.get("x-hwid-active"), "true");
    assert.equal(first.headers.get("x-hwid-max-devices-reached"), null);
    const second = await fetchAs(user, hwid("hwid-two"));
    assert.ok(isReal(second), second.links.join("\n"));

    const third = await fetchAs(user, hwid("hwid-three"));
    assert.ok(!isReal(third), third.links.join("\n"));
    assert.equal(placeholderName(third), "device limit reached: remove a device to add this one");
    assert.equal(third.headers.get("x-hwid-active"), "true");
    assert.equal(third.headers.get("x-hwid-max-devices-reached"), "true");
    assert.equal(third.headers.get("x-hwid-limit"), "true");
    assert.equal(third.headers.get("x-hwid-not-supported"), null);
    // the known devices keep their links
    assert.ok(isReal(await fetchAs(user, hwid("hwid-one"))));

    const listed = await devicesOf(user);
    assert.equal(listed.effective_device_limit, 2);
    assert.deepEqual(listed.devices.map((d) => d.hwid).sort(), ["hwid-one", "hwid-two"]);
    const one = listed.devices.find((d) => d.hwid === "hwid-one") as Device;
    assert.deepEqual(
      [one.os, one.os_version, one.model, one.app],
      ["Android", "14", "Pixel 8", "Happ/3.1.2"],
    );
    assert.ok(one.last_seen_at >= one.first_seen_at);

    const events = await t.deps.database.db
      .selectFrom("notification_events")
      .select(["type", "payload"])
      .where("type", "=", "user.device_limit_reached")
      .execute();
    const mine = events.filter((e) => e.payload.includes(user.id));
    assert.equal(mine.length, 1, JSON.stringify(events));
    assert.match(mine[0]?.payload ?? "", /"devices":2,"device_limit":2/);

    const removed = await request(t, "DELETE", `/api/users/${user.id}/devices/${one.id}`);
    assert.equal(removed.statusCode, 204, removed.body);
    const admitted = await fetchAs(user, hwid("hwid-three"));
    assert.ok(isReal(admitted), admitted.links.join("\n"));
    assert.deepEqual((await devicesOf(user)).devices.map((d) => d.hwid).sort(), ["hwid-three", "hwid-two"]);
    // and now the deleted one is the new device over the limit
    assert.ok(!isReal(await fetchAs(user, hwid("hwid-one"))));
  });

  test("N concurrent first fetches with different HWIDs at limit 2 admit exactly 2", async () => {
    const user = await newUser({ device_limit: 2 });
    const fetches = await Promise.all(
      Array.from({ length: 12 }, (_, i) => fetchAs(user, hwid(`racer-${i}`))),
    );
    const admitted = fetches.filter(isReal);
    assert.equal(admitted.length, 2, fetches.map((f) => f.links.join(" ")).join("\n"));
    assert.equal(fetches.filter((f) => f.headers.get("x-hwid-max-devices-reached") === "true").length, 10);
    assert.equal((await devicesOf(user)).devices.length, 2);
  });

  test("without an HWID: the links, unless the settings require one (x-hwid-not-supported)", async () => {
    const user = await newUser({ device_limit: 1 });
    const plain = await fetchAs(user);
    assert.ok(isReal(plain));
    assert.equal(plain.headers.get("x-hwid-active"), "true");
    const required = await request(t, "PUT", "/api/subscription-settings", { require_hwid: true });
    assert.equal(required.statusCode, 200, required.body);
    try {
      const refused = await fetchAs(user);
      assert.equal(placeholderName(refused), "this app does not send a device id (HWID)");
      assert.equal(refused.headers.get("x-hwid-not-supported"), "true");
      assert.equal(refused.headers.get("x-hwid-max-devices-reached"), null);
      assert.ok(isReal(await fetchAs(user, hwid("phone"))));
    } finally {
      const back = await request(t, "PUT", "/api/subscription-settings", { require_hwid: false });
      assert.equal(back.statusCode, 200, back.body);
    }
  });

  test("hostile header values: an HWID that cannot be one is refused and never stored; texts are stored cleaned", async () => {
    const user = await newUser({ device_limit: 3 });
    for (const bad of ["x".repeat(129), "has space", "é-latin1", ""]) {
      const res = await rawRequest(port, {
        target: `${user.subscription_url}/base64`,
        headers: { "user-agent": "Happ/3.1.2", "x-hwid": bad },
      });
      assert.equal(res.status, 200, res.body);
      assert.equal(res.headers["x-hwid-not-supported"], "true", JSON.stringify(bad));
      assert.doesNotMatch(Buffer.from(res.body, "base64").toString("utf8"), /vpn\.example\.com/);
    }
    // a huge header is refused by Node's parser (431), NUL or a bare CR by the HTTP parser (400): never a 500
    const huge = await rawRequest(port, {
      target: `${user.subscription_url}/base64`,
      headers: { "x-hwid": "a".repeat(100), "x-device-model": "m".repeat(70_000) },
    });
    assert.equal(huge.status, 431);
    const nul = await rawRequest(port, {
      target: `${user.subscription_url}/base64`,
      headers: { "x-hwid": "abc", "x-device-model": "evil\u0000model" },
    });
    assert.equal(nul.status, 400);
    // Unicode line breaks, bidi overrides and controls sent as UTF-8 bytes: stored without them, cut to 128
    const model = Buffer.from("Pixel\u2028 9\u202e\u0085Pro", "utf8").toString("latin1");
    const cleaned = await rawRequest(port, {
      target: `${user.subscription_url}/base64`,
      headers: {
        "user-agent": `Happ/${"9".repeat(300)}`,
        "x-hwid": "clean-1",
        "x-device-model": model,
        "x-device-os": "\t iOS \t",
      },
    });
    assert.equal(cleaned.status, 200, cleaned.body);
    assert.equal(cleaned.headers["x-hwid-active"], "true");
    const [device] = (await devicesOf(user)).devices;
    assert.equal(device?.hwid, "clean-1");
    assert.equal(device?.model, "Pixel 9Pro");
    assert.equal(device?.os, "iOS");
    assert.equal(device?.app?.length, 128);
  });

  test("a user without a limit is answered by the fast path, and no device is recorded", async () => {
    const user = await newUser();
    const first = await fetchAs(user, hwid("free-1"));
    assert.ok(isReal(first));
    assert.equal(first.headers.get("x-hwid-active"), null);
    assert.deepEqual((await devicesOf(user)).devices, []);
    assert.equal((await devicesOf(user)).effective_device_limit, 0);
    // a default limit in the settings applies to users whose own is null, at once
    const set = await request(t, "PUT", "/api/subscription-settings", { default_device_limit: 1 });
    assert.equal(set.statusCode, 200, set.body);
    try {
      assert.ok(isReal(await fetchAs(user, hwid("free-1"))));
      const second = await fetchAs(user, hwid("free-2"));
      assert.equal(second.headers.get("x-hwid-max-devices-reached"), "true");
      assert.equal((await devicesOf(user)).effective_device_limit, 1);
      // 0 on the user: unlimited whatever the default
      const own = await request(t, "PUT", `/api/users/${user.id}`, { device_limit: 0 });
      assert.equal(own.statusCode, 200, own.body);
      const free = await fetchAs(user, hwid("free-2"));
      assert.ok(isReal(free));
      assert.equal(free.headers.get("x-hwid-active"), null);
    } finally {
      const back = await request(t, "PUT", "/api/subscription-settings", { default_device_limit: 0 });
      assert.equal(back.statusCode, 200, back.body);
    }
  });

  test("the API: 404 for an unknown user or device, a device of another user, validation of device_limit", async () => {
    const user = await newUser({ device_limit: 1 });
    const other = await newUser({ device_limit: 1 });
    await fetchAs(other, hwid("others"));
    const [theirs] = (await devicesOf(other)).devices;
    assert.ok(theirs !== undefined);
    assert.equal((await request(t, "DELETE", `/api/users/${user.id}/devices/${theirs.id}`)).statusCode, 404);
    assert.equal((await devicesOf(other)).devices.length, 1);
    assert.equal((await request(t, "GET", `/api/users/${randomUUID()}/devices`)).statusCode, 404);
    assert.equal((await request(t, "DELETE", `/api/users/${user.id}/devices/not-a-uuid`)).statusCode, 400);
    for (const value of [-1, 1.5, 1001, "2"]) {
      const res = await request(t, "PUT", `/api/users/${user.id}`, { device_limit: value });
      assert.equal(res.statusCode, 400, `${value}: ${res.body}`);
    }
  });
});
