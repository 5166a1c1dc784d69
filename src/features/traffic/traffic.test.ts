// Traffic collection on whichever dialect DATABASE_URL selects: counters become deltas (pure), the
// batched write adds them to the user's first grant on that server and to the inbound (all or
// nothing, beyond int4 and beyond one 500-row batch), and a collection from an Xray core (the
// recording stand-in) resets its counters and shows on usage, access records and the subscription.
// The journal (migration 0034): a collection's deltas are durable once journaled, and the fold adds
// them exactly once: after a restart, with folds running at once, with one row failing; many polls
// folded at once write each user once per hour; the job polls and asks for a fold that runs in a loop
// of its own (polls go on while it is slow), and the lifecycle tick follows each fold.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { bulkGrant, createUsers } from "../../../test/support/convergence.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { startRecordingXray } from "../../../test/support/recording-grpc.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import { collectTrafficJob } from "../../jobs/collect-traffic.ts";
import { limiter } from "../../lib/limiter.ts";
import type { ServerLeases } from "../sync/leases.ts";
import { TrafficRepository } from "./traffic.repository.ts";
import { TrafficService } from "./traffic.service.ts";
import { parseTraffic, polledOf } from "./traffic.ts";

const stack = new CleanupStack();
let t: TestApp;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "2000" });
});
after(async () => {
  await t.close();
  await stack.run();
});

const stat = (name: string, value: number) => ({ name, value: BigInt(value) });

describe("counters to deltas", () => {
  test("user and inbound counters are summed per name; zeros, other counters and the API inbound are left out", () => {
    const deltas = parseTraffic(
      [
        stat("user>>>u-1>>>traffic>>>uplink", 10),
        stat("user>>>u-1>>>traffic>>>downlink", 20),
        stat("user>>>u-2>>>traffic>>>downlink", 0),
        stat("inbound>>>vless-443>>>traffic>>>downlink", 5),
        stat("inbound>>>api>>>traffic>>>downlink", 999),
        stat("outbound>>>direct>>>traffic>>>downlink", 999),
      ],
      ["api", "api-in"],
    );
    assert.deepEqual([...deltas.users], [["u-1", { uplinkBytes: 10, downlinkBytes: 20 }]]);
    assert.deepEqual([...deltas.inbounds], [["vless-443", { uplinkBytes: 0, downlinkBytes: 5 }]]);
  });
});

describe("writing traffic totals", () => {
  test("each user's bytes land on their first grant on the server, in batches, beyond 32 bits", async () => {
    const server = await registerServer(t, 9); // nothing listens: grants stay pending, which is fine here
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const first = await createInbound(t, server.id, { template_id: template.id, port: 20_001 });
    const second = await createInbound(t, server.id, { template_id: template.id, port: 20_002 });
    const users = await createUsers(t.deps, 1200, "traffic");
    const granted = await bulkGrant(t, server.id, first.id, users);
    await bulkGrant(t, server.id, second.id, users.slice(0, 1));
    const emailOf = new Map(granted.results.map((r) => [r.user_id, r.proxy_user_id]));
    const users1 = new Map(
      users.map((id, i) => [emailOf.get(id) ?? "", { uplinkBytes: i + 1, downlinkBytes: 5_000_000_000 }]),
    );
    users1.set("u-not-on-this-server", { uplinkBytes: 1, downlinkBytes: 1 });
    const inbounds = new Map([[first.tag, { uplinkBytes: 7, downlinkBytes: 8 }]]);
    const repository = new TrafficRepository(t.deps.database.db, t.deps.database.dialect);
    const at = new Date();
    assert.equal(await repository.addTraffic(server.id, { users: users1, inbounds }, { now: at }), 1200);
    await repository.addTraffic(
      server.id,
      {
        users: new Map([[emailOf.get(users[0] ?? "") ?? "", { uplinkBytes: 100, downlinkBytes: 0 }]]),
        inbounds: new Map(),
      },
      { now: at },
    );

    const records = (await request(t, "GET", `/api/users/${users[0]}/access`)).json();
    assert.deepEqual(
      records.map((r: { server_inbound_id: string; uplink_bytes: number; downlink_bytes: number }) => [
        r.server_inbound_id,
        r.uplink_bytes,
        r.downlink_bytes,
      ]),
      [
        [first.id, 101, 5_000_000_000],
        [second.id, 0, 0],
      ],
      "the oldest grant carries the user's bytes on the server",
    );
    const last = (await request(t, "GET", `/api/users/${users[1199]}/usage`)).json();
    assert.deepEqual(last, {
      user_id: users[1199],
      uplink_bytes: 1200,
      downlink_bytes: 5_000_000_000,
      servers: [
        { server_id: server.id, server_name: server.name, uplink_bytes: 1200, downlink_bytes: 5_000_000_000 },
      ],
    });
    const inbound = await t.deps.database.db
      .selectFrom("server_inbounds")
      .select(["uplink_bytes", "downlink_bytes"])
      .where("id", "=", first.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual([Number(inbound.uplink_bytes), Number(inbound.downlink_bytes)], [7, 8]);
  });

  test("revoking the grant that carries a user's bytes moves them to the user's next grant there", async () => {
    const server = await registerServer(t, 9);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const first = await createInbound(t, server.id, { template_id: template.id, port: 20_011 });
    const second = await createInbound(t, server.id, { template_id: template.id, port: 20_012 });
    const carrier = await grant(t, server.id, first.id, { name: "mover" });
    await grant(t, server.id, second.id, { user_id: carrier.user_id });
    const bytes = new Map([[carrier.proxy_user_id, { uplinkBytes: 5, downlinkBytes: 6 }]]);
    await new TrafficRepository(t.deps.database.db, t.deps.database.dialect).addTraffic(
      server.id,
      { users: bytes, inbounds: new Map() },
      { now: new Date() },
    );
    const revoke = await request(
      t,
      "DELETE",
      `/api/servers/${server.id}/inbounds/${first.id}/users/${carrier.user_id}`,
    );
    assert.equal(revoke.statusCode, 204);
    const records = (await request(t, "GET", `/api/users/${carrier.user_id}/access`)).json();
    assert.deepEqual(
      records.map((r: { server_inbound_id: string; uplink_bytes: number }) => [
        r.server_inbound_id,
        r.uplink_bytes,
      ]),
      [[second.id, 5]],
    );
    assert.equal((await request(t, "GET", `/api/users/${carrier.user_id}/usage`)).json().downlink_bytes, 6);
  });

  test("users count bytes × the server's usage_coefficient, online_at is set, and the change feed stays quiet", async () => {
    const server = await registerServer(t, 9, { usage_coefficient: 1.5 });
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_021 });
    const counted = await grant(t, server.id, inbound.id, { name: "weighted" });
    const held = await request(t, "POST", "/api/users", {
      name: "held",
      status: "on_hold",
      on_hold_duration_seconds: 86_400,
    });
    const heldAccess = await grant(t, server.id, inbound.id, { user_id: held.json().id });
    const feed = () =>
      t.deps.database.db
        .selectFrom("subscription_changes")
        .select((eb) => eb.fn.countAll<number | string>().as("n"))
        .executeTakeFirstOrThrow()
        .then((row) => Number(row.n));
    const before = await feed();
    const repository = new TrafficRepository(t.deps.database.db, t.deps.database.dialect);
    const now = new Date("2026-05-01T12:00:00.000Z");
    const started: string[] = [];
    const bytes = (up: number, down: number) => ({ uplinkBytes: up, downlinkBytes: down });
    await repository.addTraffic(
      server.id,
      {
        users: new Map([
          [counted.proxy_user_id, bytes(100, 1000)],
          [heldAccess.proxy_user_id, bytes(1, 1)],
        ]),
        inbounds: new Map(),
      },
      { now, started },
    );
    await repository.addTraffic(server.id, {
      users: new Map([[counted.proxy_user_id, bytes(0, 2)]]),
      inbounds: new Map(),
    });
    const user = (await request(t, "GET", `/api/users/${counted.user_id}`)).json();
    assert.deepEqual(
      [user.used_bytes, user.lifetime_used_bytes],
      [1653, 1653],
      "(1100 + 2) × 1.5, rounded per write",
    );
    assert.ok(Date.parse(user.online_at) > now.getTime(), "the second write's time");
    const access = (await request(t, "GET", `/api/users/${counted.user_id}/access`)).json();
    assert.deepEqual(
      [access[0].uplink_bytes, access[0].downlink_bytes],
      [100, 1002],
      "grant totals stay raw bytes",
    );
    const heldNow = (await request(t, "GET", `/api/users/${held.json().id}`)).json();
    assert.deepEqual(
      [heldNow.status, heldNow.expire_at, heldNow.used_bytes],
      ["active", "2026-05-02T12:00:00.000Z", 3],
      "the first traffic starts an on-hold clock",
    );
    assert.deepEqual(started, [held.json().id]);
    // The on-hold start changed status and expire_at (one row); counting alone adds none.
    assert.equal(await feed(), before + 1);
  });

  test("usage of an unknown user is 404", async () => {
    const res = await request(t, "GET", "/api/users/00000000-0000-4000-8000-000000000000/usage");
    assert.equal(res.statusCode, 404);
  });
});

describe("collecting from a core", () => {
  test("counters are read with reset and added once: usage, access records and Subscription-Userinfo show them", async () => {
    const xray = await startRecordingXray(stack.add);
    const port = Number(xray.address.split(":")[1]);
    const server = await registerServer(t, port);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_003 });
    const access = await grant(t, server.id, inbound.id, { name: "counted" });
    assert.equal(access.sync_state, "synced");
    xray.counters.set(`user>>>${access.proxy_user_id}>>>traffic>>>uplink`, 300n);
    xray.counters.set(`user>>>${access.proxy_user_id}>>>traffic>>>downlink`, 4000n);
    xray.counters.set(`inbound>>>${inbound.tag}>>>traffic>>>downlink`, 4100n);

    assert.deepEqual(await t.deps.services.traffic.collect(server.id), { users: 1, inbounds: 1 });
    assert.equal(
      xray.counters.get(`user>>>${access.proxy_user_id}>>>traffic>>>downlink`),
      0n,
      "reset on the core",
    );
    assert.deepEqual(await t.deps.services.traffic.collect(server.id), { users: 0, inbounds: 0 });

    const usage = (await request(t, "GET", `/api/users/${access.user_id}/usage`)).json();
    assert.deepEqual([usage.uplink_bytes, usage.downlink_bytes], [300, 4000]);
    // Subscription-Userinfo tells the period's used_bytes (the lifecycle's share of a collection),
    // split in the proportion of the grant's counters (300:4000).
    const { used_bytes: used } = (await request(t, "GET", `/api/users/${access.user_id}`)).json() as {
      used_bytes: number;
    };
    assert.equal(used, 4300, "the collection counts into the period's used_bytes (coefficient 1)");
    const upload = Math.round((used * 300) / 4300);
    const sub = await t.app.inject({ method: "GET", url: `/sub/${access.user_id}` });
    assert.equal(
      sub.headers["subscription-userinfo"],
      `upload=${upload}; download=${used - upload}; total=0; expire=0`,
    );
  });
});

describe("the journal: durable at once, folded into the totals exactly once", () => {
  test("flush journals what was read with reset but not journaled, once; a restarted instance folds it", async () => {
    const xray = await startRecordingXray(stack.add);
    const server = await registerServer(t, Number(xray.address.split(":")[1]));
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_004 });
    const access = await grant(t, server.id, inbound.id, { name: "flushed" });
    xray.counters.set(`user>>>${access.proxy_user_id}>>>traffic>>>downlink`, 777n);
    let isDatabaseDown = true;
    class FlakyRepository extends TrafficRepository {
      override async journal(...args: Parameters<TrafficRepository["journal"]>) {
        if (isDatabaseDown) throw new Error("database unavailable");
        return super.journal(...args);
      }
    }
    const traffic = service(new FlakyRepository(t.deps.database.db, t.deps.database.dialect));
    await assert.rejects(traffic.collect(server.id), /database unavailable/);
    assert.equal(
      xray.counters.get(`user>>>${access.proxy_user_id}>>>traffic>>>downlink`),
      0n,
      "reset on the core",
    );
    isDatabaseDown = false;
    assert.equal(await traffic.flush(), 1);
    assert.equal(await traffic.flush(), 0, "nothing left to journal");
    assert.equal(await downlink(access.user_id), 0, "journaled, not folded yet");
    // A new instance (the panel restarted after the journal write, before any fold) finds it.
    const restarted = service(new TrafficRepository(t.deps.database.db, t.deps.database.dialect));
    assert.equal((await restarted.fold()).rows, 1);
    assert.equal(await downlink(access.user_id), 777);
    assert.equal((await restarted.fold()).rows, 0, "folded once");
    assert.equal(await downlink(access.user_id), 777, "not counted twice");
  });

  test("a crash between the poll's write and the fold loses nothing: a restarted instance folds every poll, each once", async () => {
    const xray = await startRecordingXray(stack.add);
    const server = await registerServer(t, Number(xray.address.split(":")[1]));
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_007 });
    const access = await grant(t, server.id, inbound.id, { name: "crashed" });
    const counter = `user>>>${access.proxy_user_id}>>>traffic>>>downlink`;
    const crashed = service(new TrafficRepository(t.deps.database.db, t.deps.database.dialect));
    for (const bytes of [1000n, 2000n]) {
      xray.counters.set(counter, bytes);
      const [result] = await crashed.collectAll([server.id], limiter(1));
      assert.deepEqual(result, { status: "fulfilled", value: { users: 1, inbounds: 0 } });
      assert.equal(xray.counters.get(counter), 0n, "reset on the core");
    }
    const before = (await request(t, "GET", `/api/users/${access.user_id}`)).json().used_bytes;
    assert.equal(before, 0, "journaled only: the totals wait for the fold");
    const restarted = service(new TrafficRepository(t.deps.database.db, t.deps.database.dialect));
    const folded = await restarted.fold();
    assert.deepEqual(
      [folded.rows, folded.users],
      [2, 1],
      "two polls of the same hour, one user written once",
    );
    assert.equal(await downlink(access.user_id), 3000);
    const user = (await request(t, "GET", `/api/users/${access.user_id}`)).json();
    assert.deepEqual([user.used_bytes, user.lifetime_used_bytes], [3000, 3000]);
    assert.equal((await restarted.fold()).rows, 0);
    assert.equal(await downlink(access.user_id), 3000, "not counted twice");
  });

  test("folds running at once take different rows: every byte counted once", async () => {
    const server = await registerServer(t, 9);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_008 });
    const users = await createUsers(t.deps, 30, "folded");
    const granted = await bulkGrant(t, server.id, inbound.id, users);
    const repository = new TrafficRepository(t.deps.database.db, t.deps.database.dialect);
    const at = new Date();
    for (let poll = 0; poll < 6; poll++) {
      const deltas = new Map(
        granted.results.map((r) => [r.proxy_user_id, { uplinkBytes: 1, downlinkBytes: 10 }]),
      );
      await repository.journal(
        [{ serverId: server.id, traffic: polledOf({ users: deltas, inbounds: new Map() }) }],
        at,
      );
    }
    const folds = await Promise.all([
      repository.fold({ limit: 1 }),
      repository.fold({ limit: 2 }),
      repository.fold({ limit: 1 }),
      repository.fold(),
    ]);
    assert.equal(
      folds.reduce((sum, folded) => sum + folded.rows, 0),
      6,
      "each journal row folded by exactly one of them",
    );
    assert.deepEqual(await repository.pending(), []);
    for (const userId of users) assert.equal(await downlink(userId), 60);
  });

  test("a journal row whose fold fails holds back only its own bytes, and is folded once when it works again", async () => {
    const xray = await startRecordingXray(stack.add);
    const other = await startRecordingXray(stack.add);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const accesses = [];
    for (const [k, core] of [xray, other].entries()) {
      const server = await registerServer(t, Number(core.address.split(":")[1]));
      const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_005 + k });
      const access = await grant(t, server.id, inbound.id, { name: `together-${k}` });
      core.counters.set(`user>>>${access.proxy_user_id}>>>traffic>>>uplink`, BigInt(1000 + k));
      accesses.push({ serverId: server.id, access });
    }
    const [held, written] = accesses as [(typeof accesses)[0], (typeof accesses)[0]];
    let failing: string | undefined = held.serverId;
    const calls: string[] = [];
    class OneServerDown extends TrafficRepository {
      override async fold(options: Parameters<TrafficRepository["fold"]>[0] = {}) {
        const pending = await this.pending();
        const serverIds = pending
          .filter(({ seq }) => options.only === undefined || seq === options.only)
          .map(({ serverId }) => serverId);
        calls.push(options.only === undefined ? `joint ${serverIds.length}` : "one");
        if (failing !== undefined && serverIds.includes(failing))
          throw new Error("this server's write fails");
        return super.fold(options);
      }
    }
    const traffic = service(new OneServerDown(t.deps.database.db, t.deps.database.dialect));
    const ids = [held.serverId, written.serverId];
    const results = await traffic.collectAll(ids, limiter(2));
    assert.deepEqual(
      results.map((result) => result.status),
      ["fulfilled", "fulfilled"],
      "both journaled",
    );
    const folded = await traffic.fold();
    assert.equal(folded.rows, 1, "the other server's row folded");
    assert.deepEqual(calls, ["joint 2", "one", "one"]);
    const uplink = async (userId: string) =>
      (await request(t, "GET", `/api/users/${userId}/usage`)).json().uplink_bytes;
    assert.equal(await uplink(written.access.user_id), 1001, "the other server's bytes are written");
    assert.equal(await uplink(held.access.user_id), 0, "the failing server's bytes are held");
    failing = undefined;
    assert.equal((await traffic.fold()).rows, 1);
    assert.equal(await uplink(held.access.user_id), 1000, "written once, when the write works again");
    assert.equal(await uplink(written.access.user_id), 1001, "not counted twice");
  });
});

describe("folding many polls at once", () => {
  test("several polls journaled, then one fold: exact totals and hourly buckets, each user written once per hour", async () => {
    const servers = [await registerServer(t, 9), await registerServer(t, 9)];
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const users = await createUsers(t.deps, 40, "many-polls");
    const emails = new Map<string, Map<string, string>>(); // server → user → email
    for (const [k, server] of servers.entries()) {
      const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_030 + k });
      const granted = await bulkGrant(t, server.id, inbound.id, users);
      emails.set(server.id, new Map(granted.results.map((r) => [r.user_id, r.proxy_user_id])));
    }
    const repository = new TrafficRepository(t.deps.database.db, t.deps.database.dialect);
    // Five polls over both servers: three in 10:00–11:00, two in 11:00–12:00 (user i: i+1 up, 10 down).
    const times = ["10:05", "10:20", "10:55", "11:00", "11:30"].map((hm) => new Date(`2026-11-24T${hm}:00Z`));
    for (const at of times) {
      const parts = servers.map((server) => {
        const deltas = new Map(
          users.map((id, i) => [
            emails.get(server.id)?.get(id) ?? "",
            { uplinkBytes: i + 1, downlinkBytes: 10 },
          ]),
        );
        return { serverId: server.id, traffic: polledOf({ users: deltas, inbounds: new Map() }) };
      });
      await repository.journal(parts, at);
    }
    const folded = await service(repository).fold();
    assert.equal(folded.rows, 10, "every poll of every server");
    assert.equal(folded.users, 2 * users.length, "per server, each user written once, not once per poll");
    for (const [i, userId] of users.entries()) {
      const usage = (await request(t, "GET", `/api/users/${userId}/usage`)).json();
      assert.deepEqual([usage.uplink_bytes, usage.downlink_bytes], [2 * 5 * (i + 1), 2 * 5 * 10]);
      const user = (await request(t, "GET", `/api/users/${userId}`)).json();
      assert.equal(user.used_bytes, 2 * 5 * (i + 1 + 10));
      assert.equal(user.online_at, "2026-11-24T11:30:00.000Z", "the latest poll's time");
      const series = (
        await request(
          t,
          "GET",
          `/api/users/${userId}/usage?from=2026-11-24T09:00:00Z&to=2026-11-24T13:00:00Z&granularity=hour`,
        )
      ).json();
      assert.deepEqual(nonZero(series.buckets), [
        ["2026-11-24T10:00:00.000Z", 2 * 3 * (i + 1), 2 * 3 * 10],
        ["2026-11-24T11:00:00.000Z", 2 * 2 * (i + 1), 2 * 2 * 10],
      ]);
    }
    const rows = await t.deps.database.db
      .selectFrom("user_usage_hourly")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("user_id", "in", users)
      .executeTakeFirstOrThrow();
    assert.equal(Number(rows.n), users.length * 2 * 2, "one row per user, server and hour");
    assert.deepEqual(await repository.pending(), []);
  });

  test("two panels folding at once, in many small batches, count every poll once", async () => {
    const servers = [await registerServer(t, 9), await registerServer(t, 9), await registerServer(t, 9)];
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const users = await createUsers(t.deps, 25, "racing");
    const parts: { serverId: string; emails: string[] }[] = [];
    for (const [k, server] of servers.entries()) {
      const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_040 + k });
      const granted = await bulkGrant(t, server.id, inbound.id, users);
      parts.push({ serverId: server.id, emails: granted.results.map((r) => r.proxy_user_id) });
    }
    const repository = new TrafficRepository(t.deps.database.db, t.deps.database.dialect);
    const polls = 8;
    for (let poll = 0; poll < polls; poll++) {
      await repository.journal(
        parts.map(({ serverId, emails }) => ({
          serverId,
          traffic: polledOf({
            users: new Map(emails.map((email) => [email, { uplinkBytes: 1, downlinkBytes: 100 }])),
            inbounds: new Map(),
          }),
        })),
        new Date(),
      );
    }
    // batchBytes 1: a transaction per server; two instances (two services) racing over the same rows.
    const folds = await Promise.all([
      service(new TrafficRepository(t.deps.database.db, t.deps.database.dialect)).fold({ batchBytes: 1 }),
      service(new TrafficRepository(t.deps.database.db, t.deps.database.dialect)).fold({ batchBytes: 1 }),
    ]);
    assert.equal(folds[0].rows + folds[1].rows, polls * servers.length, "each row folded by one of them");
    assert.deepEqual(await repository.pending(), []);
    for (const userId of users) {
      const usage = (await request(t, "GET", `/api/users/${userId}/usage`)).json();
      assert.deepEqual([usage.uplink_bytes, usage.downlink_bytes], [polls * 3, polls * 3 * 100]);
    }
  });
});

describe("the fold's tables", () => {
  test("PostgreSQL: user_access pages leave room for the fold's updates to stay on the page (fillfactor 60)", async (ctx) => {
    if (t.deps.database.dialect !== "postgres") return ctx.skip("PostgreSQL only");
    const { rows } = await sql<{ options: string[] | null }>`
      select reloptions as options from pg_class where oid = 'user_access'::regclass`.execute(
      t.deps.database.db,
    );
    assert.deepEqual(rows[0]?.options, ["fillfactor=60"]);
  });
});

describe("the collection job", () => {
  test("a run journals and asks for a fold; the tick follows the fold: a user over their data limit is limited", async () => {
    const xray = await startRecordingXray(stack.add);
    const server = await registerServer(t, Number(xray.address.split(":")[1]));
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_009 });
    const access = await grant(t, server.id, inbound.id, { name: "over-the-limit" });
    const patched = await request(t, "PUT", `/api/users/${access.user_id}`, { data_limit_bytes: 1000 });
    assert.equal(patched.statusCode, 200, patched.body);
    xray.counters.set(`user>>>${access.proxy_user_id}>>>traffic>>>downlink`, 1500n);
    const job = collectTrafficJob({
      traffic: t.deps.services.traffic,
      leases: holding(server.id),
      logger: t.deps.logger,
      intervalMs: 60_000,
      concurrency: 2,
      afterFold: () => t.deps.services.lifecycle.tick(),
    });
    await job.run({ signal: new AbortController().signal });
    await job.folder.idle();
    const user = (await request(t, "GET", `/api/users/${access.user_id}`)).json();
    assert.deepEqual([user.used_bytes, user.status], [1500, "limited"]);
    assert.deepEqual(await new TrafficRepository(t.deps.database.db, t.deps.database.dialect).pending(), []);
    await job.drain?.();
  });

  test("polls keep going while a fold is slow; the next fold takes every poll journaled meanwhile, once", async () => {
    const xray = await startRecordingXray(stack.add);
    const server = await registerServer(t, Number(xray.address.split(":")[1]));
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 20_010 });
    const access = await grant(t, server.id, inbound.id, { name: "slow-fold" });
    const counter = `user>>>${access.proxy_user_id}>>>traffic>>>downlink`;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const folds: number[] = [];
    class SlowFold extends TrafficRepository {
      override async fold(options: Parameters<TrafficRepository["fold"]>[0] = {}) {
        await gate; // the first fold (and any after it) waits until the test lets it go
        const folded = await super.fold(options);
        folds.push(folded.rows);
        return folded;
      }
    }
    const traffic = service(new SlowFold(t.deps.database.db, t.deps.database.dialect));
    const job = collectTrafficJob({
      ...{ traffic, leases: holding(server.id), logger: t.deps.logger },
      ...{ intervalMs: 60_000, concurrency: 2 },
    });
    const signal = new AbortController().signal;
    for (const bytes of [100n, 20n, 3n]) {
      xray.counters.set(counter, bytes);
      await job.run({ signal }); // returns with the fold still held at the gate
      assert.equal(xray.counters.get(counter), 0n, "polled and reset while the fold waits");
    }
    const repository = new TrafficRepository(t.deps.database.db, t.deps.database.dialect);
    assert.equal((await repository.pending()).length, 3, "three polls journaled during one fold");
    assert.equal(await downlink(access.user_id), 0, "none folded yet");
    release();
    await job.folder.idle();
    assert.equal(await downlink(access.user_id), 123, "every poll counted once");
    assert.equal(
      folds.reduce((sum, rows) => sum + rows, 0),
      3,
    );
    assert.ok(folds.length <= 2, `one held fold and at most one after it, not one per poll: ${folds}`);
    assert.deepEqual(await repository.pending(), []);
    await job.drain?.();
  });
});

function holding(serverId: string): ServerLeases {
  return { holds: (id: string) => id === serverId, track: () => {} } as unknown as ServerLeases;
}

function nonZero(buckets: { start: string; uplink_bytes: number; downlink_bytes: number }[]) {
  return buckets
    .filter((b) => b.uplink_bytes + b.downlink_bytes > 0)
    .map((b) => [b.start, b.uplink_bytes, b.downlink_bytes]);
}

function service(repository: TrafficRepository): TrafficService {
  const { sync, servers, users } = t.deps.services;
  return new TrafficService(repository, sync, servers, users, t.deps.logger, () => new Date());
}

async function downlink(userId: string): Promise<number> {
  return (await request(t, "GET", `/api/users/${userId}/usage`)).json().downlink_bytes;
}
