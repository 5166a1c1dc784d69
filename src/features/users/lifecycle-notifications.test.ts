// Lifecycle notifications reach a real HTTP receiver, on whichever dialect DATABASE_URL selects: a
// scripted scenario (traffic through the real counting write, ticks at an injected clock) gives
// exactly the expected events, each signed; with the receiver down and the service "restarted"
// (another instance on the same database), they still arrive.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { Dispatcher } from "../notifications/dispatcher.ts";
import { NotificationsRepository } from "../notifications/notifications.repository.ts";
import { TrafficRepository } from "../traffic/traffic.repository.ts";
import { LifecycleRepository } from "./lifecycle.repository.ts";
import { LifecycleService } from "./lifecycle.service.ts";

const LIFECYCLE_EVENTS = [
  "user.activated",
  "user.limited",
  "user.expired",
  "user.usage_threshold",
  "user.expiring",
];

type Received = { headers: IncomingMessage["headers"]; body: string };
type Event = {
  id: string;
  type: string;
  data: {
    user: { id: string; name: string; status: string };
    percent?: number;
    previous_status?: string;
    days_left?: number;
  };
};

async function receiver(port = 0) {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString() });
      response.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { received, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function verify(secret: string, got: Received): boolean {
  const timestamp = String(got.headers["x-portcullis-timestamp"]);
  const expected = `sha256=${createHmac("sha256", secret).update(`${timestamp}.${got.body}`).digest("hex")}`;
  return got.headers["x-portcullis-signature"] === expected;
}

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

const api = (method: "GET" | "POST" | "PUT", url: string, payload?: object) =>
  t.app.inject({ method, url, headers: t.auth, ...(payload === undefined ? {} : { payload }) });

/** Users granted on an inbound of a server without a core (grants stay pending: only counting matters). */
async function countedUsers(names: string[], fields: Record<string, unknown>[]) {
  const server = await registerServer(t, 9);
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
  const users: { id: string; email: string }[] = [];
  for (const [i, name] of names.entries()) {
    const created = await api("POST", "/api/users", { name, ...fields[i] });
    assert.equal(created.statusCode, 201, created.body);
    const access = await grant(t, server.id, inbound.id, { user_id: created.json().id });
    users.push({ id: created.json().id, email: access.proxy_user_id });
  }
  const traffic = new TrafficRepository(t.deps.database.db, t.deps.database.dialect);
  const add = (user: { email: string }, bytes: number) =>
    traffic.addTraffic(server.id, {
      users: new Map([[user.email, { uplinkBytes: 0, downlinkBytes: bytes }]]),
      inbounds: new Map(),
    });
  return { users, add };
}

function clocked(start: Date) {
  const state = { now: start };
  const lifecycle = new LifecycleService(
    new LifecycleRepository(t.deps.database.db, t.deps.database.dialect),
    { thresholds: [80, 95], expiringNoticeSeconds: 3 * 86_400 },
    () => state.now,
    (type, datas) => t.deps.services.notifier.emitMany(type, datas),
    t.deps.events,
  );
  return { state, lifecycle };
}

describe("lifecycle notifications", () => {
  test("a scripted scenario gives exactly its events, each signed", async () => {
    const hook = await receiver();
    try {
      const created = await api("POST", "/api/webhooks", {
        name: "lifecycle",
        url: hook.url,
        events: LIFECYCLE_EVENTS,
      });
      assert.equal(created.statusCode, 201, created.body);
      const { secret } = created.json();
      const start = new Date();
      const { state, lifecycle } = clocked(start);
      const day = 86_400_000;
      const { users, add } = await countedUsers(
        ["capped", "leaving"],
        [
          { data_limit_bytes: 1000, data_limit_reset: "day" },
          { expire_at: new Date(start.getTime() + 2 * day).toISOString() },
        ],
      );
      const [capped, leaving] = users as [{ id: string; email: string }, { id: string; email: string }];
      await lifecycle.tick(); // leaving: expiring (2 days < 3)
      await add(capped, 850);
      await lifecycle.tick(); // capped: 80 %
      await lifecycle.tick(); // nothing twice
      await add(capped, 100);
      await lifecycle.tick(); // capped: 95 %
      await add(capped, 100);
      await lifecycle.tick(); // capped: limited
      state.now = new Date(start.getTime() + 3 * day);
      await lifecycle.tick(); // capped: reset → activated; leaving: expired
      await t.deps.services.dispatcher.deliverDue();

      const expected = [
        ["user.expiring", "leaving", 2],
        ["user.usage_threshold", "capped", 80],
        ["user.usage_threshold", "capped", 95],
        ["user.limited", "capped", undefined],
        ["user.activated", "capped", "limited"],
        ["user.expired", "leaving", undefined],
      ];
      await waitFor(() => hook.received.length >= expected.length, { timeoutMs: 10_000 });
      // Deliveries run in parallel (docs/NOTIFICATIONS.md: order by created_at if order matters), so
      // the events are compared as a set, each with its user.
      const events = hook.received.map((r) => JSON.parse(r.body) as Event);
      const key = (e: readonly unknown[]) => JSON.stringify(e);
      assert.deepEqual(
        events
          .map((e) => [
            e.type,
            e.data.user.name,
            e.data.percent ?? e.data.previous_status ?? e.data.days_left,
            e.data.user.id,
          ])
          .map(key)
          .sort(),
        expected
          .map((e) => [...e, e[1] === "capped" ? capped.id : leaving.id])
          .map(key)
          .sort(),
      );
      assert.ok(
        hook.received.every((r) => verify(secret, r)),
        "every body is signed",
      );
      assert.equal(
        new Set(hook.received.map((r) => r.headers["x-portcullis-delivery"])).size,
        expected.length,
      );
      await lifecycle.tick();
      await t.deps.services.dispatcher.deliverDue();
      assert.equal(hook.received.length, expected.length, "nothing more");
    } finally {
      await hook.close();
    }
  });

  test("with the receiver down and the service restarted in between, the events still arrive", async () => {
    const port = await freePort();
    const created = await api("POST", "/api/webhooks", {
      name: "down",
      url: `http://127.0.0.1:${port}/hook`,
      events: ["user.limited"],
    });
    const { id, secret } = created.json();
    const { lifecycle } = clocked(new Date());
    const { users, add } = await countedUsers(["late"], [{ data_limit_bytes: 10 }]);
    await add(users[0] as { email: string }, 11);
    await lifecycle.tick();
    await t.deps.services.dispatcher.deliverDue();
    const failed = (await api("GET", `/api/webhooks/${id}/deliveries`)).json().items;
    assert.deepEqual(
      failed.map((d: { status: string }) => d.status),
      ["pending"],
    );

    const restarted = await createTestApp({}, { sameDatabaseAs: t });
    const hook = await receiver(port);
    try {
      const dispatcher = new Dispatcher(
        new NotificationsRepository(restarted.deps.database.db, restarted.deps.database.dialect),
        restarted.deps.secretBox,
        restarted.deps.logger,
        { telegramApiUrl: "http://127.0.0.1:9" },
        () => new Date(Date.now() + 3_600_000),
      );
      await dispatcher.deliverDue();
      await waitFor(() => hook.received.length >= 1, { timeoutMs: 10_000 });
      const event = JSON.parse(hook.received[0]?.body ?? "{}") as Event;
      assert.deepEqual(
        [event.type, event.data.user.name, event.data.user.status],
        ["user.limited", "late", "limited"],
      );
      assert.ok(verify(secret, hook.received[0] as Received));
    } finally {
      await hook.close();
      await restarted.close();
    }
  });
});
