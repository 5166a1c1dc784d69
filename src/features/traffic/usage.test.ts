// Usage history on whichever dialect DATABASE_URL selects: what a collection adds to which hourly and
// daily bucket (an injected clock moves between collections from an Xray core, the recording
// stand-in), the ranges a chart asks for, the 400s of a bad range, pruning by age, who may read it,
// and the cascade when a user or a server goes.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { startRecordingXray } from "../../../test/support/recording-grpc.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import type { Role } from "../../lib/roles.ts";
import { TrafficRepository } from "./traffic.repository.ts";
import { TrafficService } from "./traffic.service.ts";
import { UsageRepository } from "./usage.repository.ts";
import { UsageService } from "./usage.service.ts";
import { bucketStart, denseSeries, parseRange, pruneCutoffs } from "./usage.ts";

const stack = new CleanupStack();
let t: TestApp;
let port = 21_000;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "2000" });
});
after(async () => {
  await t.close();
  await stack.run();
});

type Bucket = { start: string; uplink_bytes: number; downlink_bytes: number };

/** A server on a recording Xray, one granted user, and a traffic service whose clock the test sets. */
async function collecting() {
  const xray = await startRecordingXray(stack.add);
  const server = await registerServer(t, Number(xray.address.split(":")[1]));
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  const inbound = await createInbound(t, server.id, { template_id: template.id, port: ++port });
  const access = await grant(t, server.id, inbound.id, { name: `history ${port}` });
  const clock = { now: new Date() };
  const { sync, servers, users } = t.deps.services;
  const { db, dialect } = t.deps.database;
  const traffic = new TrafficService(
    new TrafficRepository(db, dialect),
    sync,
    servers,
    users,
    t.deps.logger,
    () => {
      return clock.now;
    },
  );
  /** Puts bytes on the core's counters and collects them at `at`. */
  async function carry(at: string, uplink: number, downlink: number): Promise<void> {
    xray.counters.set(`user>>>${access.proxy_user_id}>>>traffic>>>uplink`, BigInt(uplink));
    xray.counters.set(`user>>>${access.proxy_user_id}>>>traffic>>>downlink`, BigInt(downlink));
    clock.now = new Date(at);
    assert.deepEqual(await traffic.collect(server.id), { users: 1, inbounds: 0 });
  }
  return { server, userId: access.user_id, carry };
}

const nonZero = (buckets: Bucket[]) =>
  buckets
    .filter((b) => b.uplink_bytes + b.downlink_bytes > 0)
    .map((b) => [b.start, b.uplink_bytes, b.downlink_bytes]);

describe("buckets, pure", () => {
  test("a moment falls into its UTC hour and UTC day", () => {
    const at = new Date("2026-03-08T23:59:59.999Z");
    assert.equal(bucketStart(at, "hour").toISOString(), "2026-03-08T23:00:00.000Z");
    assert.equal(bucketStart(at, "day").toISOString(), "2026-03-08T00:00:00.000Z");
  });

  test("a range starts at its first bucket, ends before `to`, and is zero-filled between stored buckets", () => {
    const range = parseRange({
      from: "2026-11-20T10:30:00+01:00",
      to: "2026-11-20T13:00:00Z",
      granularity: "hour",
    });
    assert.equal(range.from.toISOString(), "2026-11-20T09:00:00.000Z");
    const series = denseSeries(range, [
      { start: "2026-11-20T11:00:00.000Z", uplinkBytes: 1, downlinkBytes: 2 },
    ]);
    assert.deepEqual(
      series.map((b) => [b.start, b.uplink_bytes, b.downlink_bytes]),
      [
        ["2026-11-20T09:00:00.000Z", 0, 0],
        ["2026-11-20T10:00:00.000Z", 0, 0],
        ["2026-11-20T11:00:00.000Z", 1, 2],
        ["2026-11-20T12:00:00.000Z", 0, 0],
      ],
    );
  });

  test("hourly buckets are kept 7 days, daily ones 13 months (the last day of a shorter month at month ends)", () => {
    const cutoffs = pruneCutoffs(new Date("2026-03-31T05:30:00Z"));
    assert.equal(cutoffs.hourly.toISOString(), "2026-03-24T05:00:00.000Z");
    assert.equal(cutoffs.daily.toISOString(), "2025-02-28T00:00:00.000Z");
    assert.equal(
      pruneCutoffs(new Date("2026-11-26T00:00:00Z")).daily.toISOString(),
      "2025-10-26T00:00:00.000Z",
    );
  });
});

describe("collections fill the buckets", () => {
  test("two collections in one hour add up, the next hour is a bucket of its own, and the day holds their sum", async () => {
    const { server, userId, carry } = await collecting();
    await carry("2026-11-20T10:05:00Z", 100, 1000);
    await carry("2026-11-20T10:55:00Z", 20, 5_000_000_000);
    await carry("2026-11-20T11:00:00Z", 3, 30);
    await carry("2026-11-21T00:10:00Z", 4, 40);

    const hourly = await request(
      t,
      "GET",
      `/api/users/${userId}/usage?from=2026-11-20T09:00:00Z&to=2026-11-21T01:00:00Z&granularity=hour`,
    );
    assert.equal(hourly.statusCode, 200, hourly.body);
    const series = hourly.json();
    assert.deepEqual(
      [series.user_id, series.granularity, series.from, series.to],
      [userId, "hour", "2026-11-20T09:00:00.000Z", "2026-11-21T01:00:00.000Z"],
    );
    assert.equal(series.buckets.length, 16, "every hour of the range");
    assert.deepEqual(nonZero(series.buckets), [
      ["2026-11-20T10:00:00.000Z", 120, 5_000_001_000],
      ["2026-11-20T11:00:00.000Z", 3, 30],
      ["2026-11-21T00:00:00.000Z", 4, 40],
    ]);
    assert.deepEqual([series.uplink_bytes, series.downlink_bytes], [127, 5_000_001_070]);

    const daily = (
      await request(
        t,
        "GET",
        `/api/users/${userId}/usage?from=2026-11-19T12:00:00Z&to=2026-11-22T00:00:00Z&granularity=day`,
      )
    ).json();
    assert.deepEqual(daily.buckets, [
      { start: "2026-11-19T00:00:00.000Z", uplink_bytes: 0, downlink_bytes: 0 },
      { start: "2026-11-20T00:00:00.000Z", uplink_bytes: 123, downlink_bytes: 5_000_001_030 },
      { start: "2026-11-21T00:00:00.000Z", uplink_bytes: 4, downlink_bytes: 40 },
    ]);

    const fleet = await request(
      t,
      "GET",
      `/api/usage?from=2026-11-20T00:00:00Z&to=2026-11-22T00:00:00Z&granularity=day&server_id=${server.id}`,
    );
    assert.equal(fleet.statusCode, 200, fleet.body);
    assert.deepEqual(
      fleet
        .json()
        .servers.map((s: { server_id: string; buckets: Bucket[] }) => [s.server_id, nonZero(s.buckets)]),
      [
        [
          server.id,
          [
            ["2026-11-20T00:00:00.000Z", 123, 5_000_001_030],
            ["2026-11-21T00:00:00.000Z", 4, 40],
          ],
        ],
      ],
      "the server's buckets are the sum of its users'",
    );
    const all = (
      await request(t, "GET", "/api/usage?from=2026-11-20T10:00:00Z&to=2026-11-20T12:00:00Z&granularity=hour")
    ).json();
    const mine = all.servers.find((s: { server_id: string }) => s.server_id === server.id);
    assert.deepEqual(nonZero(mine.buckets), [
      ["2026-11-20T10:00:00.000Z", 120, 5_000_001_000],
      ["2026-11-20T11:00:00.000Z", 3, 30],
    ]);
    assert.ok(all.downlink_bytes >= 5_000_001_030, "fleet totals include every server");
  });

  test("without a query the answer is still the totals per server", async () => {
    const { server, userId, carry } = await collecting();
    await carry("2026-11-20T10:05:00Z", 7, 8);
    const res = await request(t, "GET", `/api/users/${userId}/usage`);
    assert.deepEqual(res.json(), {
      user_id: userId,
      uplink_bytes: 7,
      downlink_bytes: 8,
      servers: [{ server_id: server.id, server_name: server.name, uplink_bytes: 7, downlink_bytes: 8 }],
    });
  });

  test("deleting the user or the server deletes their history", async () => {
    const first = await collecting();
    await first.carry("2026-11-20T10:05:00Z", 1, 1);
    const second = await collecting();
    await second.carry("2026-11-20T10:05:00Z", 2, 2);
    assert.equal((await request(t, "DELETE", `/api/users/${first.userId}`)).statusCode, 204);
    assert.equal((await request(t, "DELETE", `/api/servers/${second.server.id}`)).statusCode, 204);
    const { db } = t.deps.database;
    for (const table of ["user_usage_hourly", "user_usage_daily"] as const) {
      const rows = await db
        .selectFrom(table)
        .select("user_id")
        .where((eb) => eb.or([eb("user_id", "=", first.userId), eb("server_id", "=", second.server.id)]))
        .execute();
      assert.deepEqual(rows, [], table);
    }
    for (const table of ["server_usage_hourly", "server_usage_daily"] as const) {
      const rows = await db
        .selectFrom(table)
        .select("server_id")
        .where("server_id", "=", second.server.id)
        .execute();
      assert.deepEqual(rows, [], table);
    }
  });
});

describe("bad ranges", () => {
  let userId: string;
  before(async () => {
    userId = (await request(t, "POST", "/api/users", { name: "range checks" })).json().id;
  });
  const cases: [string, string, string][] = [
    [
      "from=2026-11-20T10:00:00Z&to=2026-11-20T10:00:00Z&granularity=hour",
      "querystring.to",
      "to equal to from",
    ],
    ["from=2026-11-21T00:00:00Z&to=2026-11-20T00:00:00Z&granularity=day", "querystring.to", "to before from"],
    [
      "from=2026-11-01T00:00:00Z&to=2026-11-08T00:00:01Z&granularity=hour",
      "querystring.to",
      "over 7 days hourly",
    ],
    [
      "from=2025-01-01T00:00:00Z&to=2026-02-05T00:00:01Z&granularity=day",
      "querystring.to",
      "over 400 days daily",
    ],
    ["from=yesterday&to=2026-11-20T00:00:00Z&granularity=day", "querystring.from", "not a timestamp"],
    ["from=2026-11-19&to=2026-11-20T00:00:00Z&granularity=day", "querystring.from", "a date without a time"],
    [
      "from=2026-11-19T00:00:00Z&to=2026-11-20T00:00:00Z&granularity=week",
      "querystring.granularity",
      "granularity",
    ],
    ["from=2026-11-19T00:00:00Z&to=2026-11-20T00:00:00Z", "querystring.granularity", "granularity missing"],
    ["granularity=hour", "querystring.from", "from and to missing"],
  ];
  for (const [query, path, what] of cases) {
    test(`a range with ${what} is a 400 naming ${path}`, async () => {
      for (const url of [`/api/users/${userId}/usage?${query}`, `/api/usage?${query}`]) {
        const res = await request(t, "GET", url);
        assert.equal(res.headers["content-type"], "application/problem+json; charset=utf-8", url);
        const errors = expectProblem(res, 400, "validation_failed");
        assert.ok(
          errors.some((e) => e.path === path),
          `${url}: ${JSON.stringify(errors)}`,
        );
      }
    });
  }

  test("the widest ranges are accepted: 7 days hourly (168 buckets), 400 days daily", async () => {
    const hourly = await request(
      t,
      "GET",
      `/api/users/${userId}/usage?from=2026-11-01T00:00:00Z&to=2026-11-08T00:00:00Z&granularity=hour`,
    );
    assert.equal(hourly.json().buckets.length, 168, hourly.body);
    const daily = await request(
      t,
      "GET",
      "/api/usage?from=2025-01-01T00:00:00Z&to=2026-02-05T00:00:00Z&granularity=day",
    );
    assert.equal(daily.statusCode, 200, daily.body);
    for (const server of daily.json().servers) assert.equal(server.buckets.length, 400);
  });

  test("an unknown user or server is a 404", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    const range = "from=2026-11-19T00:00:00Z&to=2026-11-20T00:00:00Z&granularity=hour";
    expectProblem(await request(t, "GET", `/api/users/${unknown}/usage?${range}`), 404, "not_found");
    expectProblem(await request(t, "GET", `/api/usage?${range}&server_id=${unknown}`), 404, "not_found");
  });
});

describe("pruning", () => {
  test("hourly buckets older than 7 days and daily ones older than 13 months go; younger ones stay", async () => {
    const { server, userId, carry } = await collecting();
    const times = [
      "2025-10-25T23:00:00Z",
      "2025-10-26T00:00:00Z",
      "2026-11-19T00:59:00Z",
      "2026-11-19T01:00:00Z",
    ];
    for (const at of times) await carry(at, 1, 1);
    const { db, dialect } = t.deps.database;
    const now = new Date("2026-11-26T01:30:00Z");
    const usage = new UsageService(
      new UsageRepository(db, dialect),
      t.deps.services.users,
      t.deps.services.servers,
      () => now,
    );
    const counts = await usage.prune();
    assert.ok(counts.hourly >= 6 && counts.daily >= 2, JSON.stringify(counts));

    const starts = async (
      table: "user_usage_hourly" | "user_usage_daily" | "server_usage_hourly" | "server_usage_daily",
    ) => {
      const rows = await db
        .selectFrom(table)
        .select("bucket_start")
        .where("server_id", "=", server.id)
        .orderBy("bucket_start")
        .execute();
      return rows.map((row) => new Date(row.bucket_start).toISOString());
    };
    for (const table of ["user_usage_hourly", "server_usage_hourly"] as const) {
      assert.deepEqual(await starts(table), ["2026-11-19T01:00:00.000Z"], table);
    }
    for (const table of ["user_usage_daily", "server_usage_daily"] as const) {
      assert.deepEqual(await starts(table), ["2025-10-26T00:00:00.000Z", "2026-11-19T00:00:00.000Z"], table);
    }
    assert.deepEqual(await usage.prune(), { hourly: 0, daily: 0 }, "a second run finds nothing");
    const left = await request(
      t,
      "GET",
      `/api/users/${userId}/usage?from=2026-11-19T00:00:00Z&to=2026-11-19T02:00:00Z&granularity=hour`,
    );
    assert.deepEqual(nonZero(left.json().buckets), [["2026-11-19T01:00:00.000Z", 1, 1]]);
  });
});

describe("who may read the history", () => {
  const tokens = new Map<Role, string>();
  before(async () => {
    for (const role of ["support", "viewer"] as const) {
      const username = `usage-${role}`;
      const password = `${username}-password`;
      const created = await request(t, "POST", "/api/admins", { username, password, role });
      assert.equal(created.statusCode, 201, created.body);
      const signIn = await t.app.inject({
        method: "POST",
        url: "/api/auth/token",
        payload: { username, password },
      });
      tokens.set(role, signIn.json().access_token);
    }
  });
  const range = "from=2026-11-19T00:00:00Z&to=2026-11-20T00:00:00Z&granularity=hour";
  const as = (role: Role, url: string) =>
    t.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${tokens.get(role)}` } });

  test("support reads a user's history but not the servers'; viewer reads both", async () => {
    const user = (await request(t, "POST", "/api/users", { name: "read by roles" })).json();
    for (const role of ["support", "viewer"] as const) {
      const res = await as(role, `/api/users/${user.id}/usage?${range}`);
      assert.equal(res.statusCode, 200, `${role}: ${res.body}`);
      assert.equal(res.json().buckets.length, 24);
    }
    expectProblem(await as("support", `/api/usage?${range}`), 403, "forbidden");
    assert.equal((await as("viewer", `/api/usage?${range}`)).statusCode, 200);
  });
});
