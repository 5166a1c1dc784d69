// The subscription tells the truth about the user's lifecycle (issue 12), on whichever dialect
// DATABASE_URL selects, over real HTTP with the fast path in front (as app.ts composes it):
// Subscription-Userinfo carries the period's usage, the limit and the expiry; a user who may not
// connect gets one placeholder entry named after the reason in every format; a change of status,
// limit, reset period, expiry or a usage reset reaches the next response (and another instance
// within its polling interval), growing usage adds no change; placeholder texts are settings;
// /sub fetches are noted in memory and written in batches. The numbers are set directly (API or SQL),
// not by a lifecycle job.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Ajv } from "ajv";
import { sql } from "kysely";
import { parse as parseYaml } from "yaml";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { startJobs } from "../../jobs/runner.ts";
import { subscriptionCacheJob } from "../../jobs/subscription-cache.ts";
import { nextResetAt } from "../../lib/periods.ts";
import { SINGBOX_SCHEMA } from "../../links/formats/singbox-schema.ts";
import {
  FETCH_RESOLUTION_S,
  FETCHES_PER_WRITE,
  FetchLog,
  type FetchRecord,
  MAX_USER_AGENT,
  markFetch,
} from "./engine/fetch-log.ts";
import {
  type PreparedRecord,
  parseUuid,
  prepareRecord,
  type RecordInput,
  splitUsage,
  writeRecord,
} from "./engine/user-record.ts";
import { withCacheFastPath } from "./fast-path.ts";
import { DEFAULT_PLACEHOLDER_TEXTS, NIL_UUID, placeholderText } from "./placeholders.ts";
import { SubscriptionsRepository } from "./subscriptions.repository.ts";

const require = createRequire(import.meta.url);
const ajv = new Ajv({ strict: false, allErrors: true });
const validateMihomo = ajv.compile(
  JSON.parse(
    readFileSync(require.resolve("meta-json-schema/schemas/meta-json-schema.json"), "utf8"),
  ) as object,
);
const validateSingbox = ajv.compile(SINGBOX_SCHEMA);

const FORMATS = ["base64", "links", "mihomo", "sing-box", "xray-json"] as const;
const DAY_MS = 86_400_000;

describe("pure: the next reset, the usage split, the placeholder's text", () => {
  const at = (iso: string) => new Date(iso);
  const iso = (date: Date | null) => date?.toISOString() ?? null;

  test("nextResetAt: calendar periods in UTC, month_rolling from the anchor's day, none for no_reset", () => {
    const wednesday = at("2026-11-25T13:00:00.000Z");
    const created = "2026-01-31T10:00:00.000Z";
    assert.equal(iso(nextResetAt("no_reset", created, wednesday)), null);
    assert.equal(iso(nextResetAt("day", created, wednesday)), "2026-11-26T00:00:00.000Z");
    assert.equal(iso(nextResetAt("week", created, wednesday)), "2026-11-30T00:00:00.000Z");
    assert.equal(
      iso(nextResetAt("week", created, at("2026-11-30T00:00:00.000Z"))),
      "2026-12-07T00:00:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("week", created, at("2026-11-29T23:59:59.000Z"))),
      "2026-11-30T00:00:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("month", created, at("2026-01-31T23:00:00.000Z"))),
      "2026-02-01T00:00:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("month", created, at("2026-12-31T23:00:00.000Z"))),
      "2027-01-01T00:00:00.000Z",
    );
    assert.equal(iso(nextResetAt("year", created, wednesday)), "2027-01-01T00:00:00.000Z");
    // The 31st: the last day of shorter months, the 31st again when the month has one.
    assert.equal(
      iso(nextResetAt("month_rolling", created, at("2026-02-15T00:00:00.000Z"))),
      "2026-02-28T10:00:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("month_rolling", created, at("2026-02-28T10:00:00.000Z"))),
      "2026-03-31T10:00:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("month_rolling", "2020-05-15T08:00:00.000Z", wednesday)),
      "2026-12-15T08:00:00.000Z",
    );
    assert.equal(
      iso(nextResetAt("month_rolling", "2026-11-25T14:00:00.000Z", wednesday)),
      "2026-12-25T14:00:00.000Z",
      "an anchor later than now (a clock skew) still gives a month after it",
    );
  });

  test("splitUsage: used_bytes in the counters' proportion, summing to used_bytes", () => {
    assert.deepEqual(splitUsage(0, 100, 300), [0, 0]);
    assert.deepEqual(splitUsage(1000, 100, 300), [250, 750]);
    assert.deepEqual(splitUsage(1001, 1, 2), [334, 667]);
    assert.deepEqual(splitUsage(500, 0, 0), [0, 500], "no counters: all download");
    const [up, down] = splitUsage(2 ** 52 + 1, 2 ** 40, 3 * 2 ** 40);
    assert.equal(up + down, 2 ** 52 + 1);
  });

  test("placeholderText: why and until when; active and on_hold get links", () => {
    const now = at("2026-11-25T13:00:00.000Z");
    const user = {
      status: "active" as const,
      dataLimitReset: "no_reset" as const,
      expireAt: "2026-11-01T09:00:00.000Z",
      lastResetAt: null,
      createdAt: "2026-01-10T00:00:00.000Z",
    };
    const texts = DEFAULT_PLACEHOLDER_TEXTS;
    assert.equal(placeholderText(user, texts, now), undefined);
    assert.equal(placeholderText({ ...user, status: "on_hold" }, texts, now), undefined);
    assert.equal(placeholderText({ ...user, status: "disabled" }, texts, now), "disabled");
    assert.equal(placeholderText({ ...user, status: "expired" }, texts, now), "expired on 2026-11-01");
    assert.equal(placeholderText({ ...user, status: "limited" }, texts, now), "data limit reached");
    assert.equal(
      placeholderText({ ...user, status: "limited", dataLimitReset: "month_rolling" }, texts, now),
      "data limit reached, resets on 2026-12-10",
    );
    assert.equal(
      placeholderText(
        { ...user, status: "limited", dataLimitReset: "month_rolling", lastResetAt: "2026-11-20T00:00:00Z" },
        texts,
        now,
      ),
      // month_rolling counts whole months from creation, as the lifecycle job resets: a reset by an
      // admin on the 20th does not move the user's day.
      "data limit reached, resets on 2026-12-10",
    );
  });
});

describe("pure: the fetch log", () => {
  test("the latest fetch per user wins; growth keeps every user; writes of FETCHES_PER_WRITE; a failed write is kept", async () => {
    let clock = 1_000;
    const log = new FetchLog(() => clock);
    const ids = Array.from({ length: 5000 }, () => randomUUID());
    for (const id of ids) log.note(id, "first/1");
    clock = 2_000;
    log.note(ids[0] as string, "second/2");
    const page = new Uint8Array(16);
    parseUuid(ids[1] as string, 0, page, 0);
    log.noteBytes(page, 0, 500, "older/0"); // an older fetch does not replace a later one
    log.note("not-a-uuid", "x");
    assert.equal(log.size, 5000);
    const batches: FetchRecord[][] = [];
    assert.equal(
      await log.flush(async (rows) => {
        batches.push(rows);
      }),
      5000,
    );
    assert.deepEqual(
      batches.map((rows) => rows.length),
      Array.from({ length: Math.ceil(5000 / FETCHES_PER_WRITE) }, (_, i) =>
        Math.min(FETCHES_PER_WRITE, 5000 - i * FETCHES_PER_WRITE),
      ),
    );
    const byId = new Map(batches.flat().map((row) => [row.userId, row]));
    assert.deepEqual([...byId.keys()].sort(), [...ids].sort());
    assert.deepEqual(byId.get(ids[0] as string), {
      userId: ids[0],
      at: new Date(2000).toISOString(),
      userAgent: "second/2",
    });
    assert.equal(byId.get(ids[1] as string)?.userAgent, "first/1");
    assert.equal(log.size, 0);

    for (const id of ids.slice(0, 1500)) log.note(id, "kept/1");
    let calls = 0;
    await assert.rejects(
      log.flush(async () => {
        calls++;
        if (calls === 2) {
          log.note(ids[1200] as string, "meanwhile/1"); // waiting: updated where it waits
          log.note(ids[150] as string, "meanwhile/150"); // in the batch being written: after it
          throw new Error("database down");
        }
      }),
      /database down/,
    );
    assert.equal(log.size, 1500 - FETCHES_PER_WRITE + 1, "the unwritten rest is kept, and one later fetch");
    log.note(ids[160] as string, "after/160"); // the failed batch waits again: updated where it waits
    assert.equal(log.size, 1500 - FETCHES_PER_WRITE + 1);
    const retried: FetchRecord[] = [];
    await log.flush(async (rows) => {
      retried.push(...rows);
    });
    assert.deepEqual(
      [...new Set(retried.map((row) => row.userId))].sort(),
      ids.slice(FETCHES_PER_WRITE, 1500).sort(),
    );
    assert.equal(retried.length, 1500 - FETCHES_PER_WRITE + 1);
    assert.deepEqual(
      retried.filter((row) => row.userId === ids[1200]).map((row) => row.userAgent),
      ["meanwhile/1"],
      "noted again while waiting: written once, the later fetch",
    );
    assert.deepEqual(
      retried.filter((row) => row.userId === ids[150]).map((row) => row.userAgent),
      ["kept/1", "meanwhile/150"],
      "noted again while its batch was being written: written again, after it",
    );
    assert.deepEqual(
      retried.filter((row) => row.userId === ids[160]).map((row) => row.userAgent),
      ["after/160"],
    );
    assert.equal(log.size, 0);
  });

  test("a client that sends a new User-Agent with every poll: one kept while it waits, not one per poll", async () => {
    let clock = 1_000;
    const log = new FetchLog(() => clock);
    const [polling, other] = [randomUUID(), randomUUID()];
    log.note(other, "agent/0"); // another user holding agent/0 keeps it
    for (let i = 0; i < 10_000; i++) {
      clock++;
      log.note(polling, `agent/${i}`);
    }
    assert.equal(log.size, 2);
    assert.equal(log.agents, 2, "agent/9999 and agent/0, not 10,000");
    log.note(other, undefined); // a later fetch without one: agent/0 is dropped
    assert.equal(log.agents, 1);
    log.note(polling, "agent/0"); // a number freed is used again
    const rows: FetchRecord[] = [];
    await log.flush(async (batch) => {
      rows.push(...batch);
    });
    assert.deepEqual(
      rows.map((row) => [row.userId, row.userAgent]),
      [
        [other, null],
        [polling, "agent/0"],
      ],
    );
    assert.equal(log.agents, 0);
  });

  test("a flush within a budget writes at least one batch; the rest goes first next time, a later fetch after it", async () => {
    let clock = 1_000;
    const log = new FetchLog(() => clock);
    const ids = Array.from({ length: 3 * FETCHES_PER_WRITE }, () => randomUUID());
    for (const id of ids) log.note(id, "first/1");
    const written: FetchRecord[][] = [];
    const write = async (rows: FetchRecord[]) => {
      written.push(rows);
    };
    assert.equal(await log.flush(write, 0), FETCHES_PER_WRITE, "a budget of 0: one batch");
    assert.equal(log.size, 2 * FETCHES_PER_WRITE);
    clock = 2_000;
    const late = ids.at(-1) as string;
    const fresh = randomUUID();
    log.note(late, "later/2"); // noted again while waiting: updated where it waits
    log.note(fresh, "fresh/1");
    assert.equal(log.size, 2 * FETCHES_PER_WRITE + 1);
    assert.equal(await log.flush(write, 0), FETCHES_PER_WRITE);
    assert.deepEqual(
      written[1]?.map((row) => row.userId),
      ids.slice(FETCHES_PER_WRITE, 2 * FETCHES_PER_WRITE),
      "the unwritten rest goes first",
    );
    assert.equal(await log.flush(write), FETCHES_PER_WRITE + 1, "no budget: everything");
    const rows = written.flat();
    assert.equal(rows.length, ids.length + 1);
    assert.equal(rows.filter((row) => row.userId === late).length, 1, "the waiting fetch was replaced");
    assert.deepEqual(new Set(rows.map((row) => row.userId)), new Set([...ids, fresh]));
    assert.deepEqual(
      rows.findLast((row) => row.userId === late),
      {
        userId: late,
        at: new Date(2_000).toISOString(),
        userAgent: "later/2",
      },
    );
    assert.equal(log.size, 0);
    assert.equal(await log.flush(write, 0), 0, "nothing left");
  });

  test("a flood of notes while a flush falls behind: users waiting are updated in place, those being written go after", async () => {
    let clock = 1_000;
    const log = new FetchLog(() => clock);
    const ids = Array.from({ length: 2 * FETCHES_PER_WRITE }, () => randomUUID());
    for (const id of ids) log.note(id, "first/1");
    const written: FetchRecord[] = [];
    clock = 2_000;
    await log.flush(async (rows) => {
      if (written.length === 0) {
        log.note(ids[10] as string, "again/2"); // its row is built and being written
        log.note(ids[150] as string, "again/2"); // waiting for the next batch
        for (const id of ids.slice(100)) log.note(id, "again/2"); // all of the next batch
      }
      written.push(...rows);
    });
    assert.equal(written.length, ids.length + 1, "every user once, and the one noted during its write again");
    assert.deepEqual(
      written.filter((row) => row.userId === ids[10]).map((row) => [row.userAgent, row.at]),
      [
        ["first/1", new Date(1_000).toISOString()],
        ["again/2", new Date(2_000).toISOString()],
      ],
    );
    for (const id of ids.slice(100)) {
      assert.deepEqual(
        written.filter((row) => row.userId === id).map((row) => row.userAgent),
        ["again/2"],
      );
    }
    assert.equal(log.size, 0);
  });

  test("markFetch: a client's fetches within FETCH_RESOLUTION_S are noted once; another agent, a later minute or a new record are noted", () => {
    const page = Buffer.alloc(256);
    const at = 8;
    const record = (): RecordInput => ({
      userId: randomUUID(),
      userName: "Fetcher",
      disposition: undefined,
      layoutSlot: 0,
      credentials: [],
      uploadBytes: 0,
      downloadBytes: 0,
      loadedAtS: 1,
    });
    const prepared = prepareRecord(record()) as PreparedRecord;
    writeRecord(page, at, prepared);
    const t0 = 1_800_000_000;
    assert.equal(markFetch(page, at, t0, "v2rayNG/1.9"), true, "the first fetch");
    assert.equal(
      markFetch(page, at, t0 + FETCH_RESOLUTION_S - 1, "v2rayNG/1.9"),
      false,
      "the same client within the minute",
    );
    assert.equal(markFetch(page, at, t0 + 5, "Happ/3.1"), true, "another client");
    assert.equal(
      markFetch(page, at, t0 + 6, "v2rayNG/1.9"),
      true,
      "back to the first: the agent changed again",
    );
    assert.equal(markFetch(page, at, t0 + 7, "v2rayNG/1.9"), false);
    assert.equal(markFetch(page, at, t0 + 6 + FETCH_RESOLUTION_S, "v2rayNG/1.9"), true, "a minute later");
    assert.equal(markFetch(page, at, t0, "v2rayNG/1.9"), true, "a clock that went back notes");
    assert.equal(markFetch(page, at, t0 + 1, undefined), true, "no agent is an agent of its own");
    assert.equal(
      markFetch(page, at, t0 + 2, ""),
      false,
      "an empty one is the same as none (both written as null)",
    );
    writeRecord(page, at, prepared);
    assert.equal(markFetch(page, at, t0 + 3, ""), true, "a record stored again starts unmarked");
    assert.equal(page.readUInt32LE(at), prepared.length, "the record's own header is untouched");
  });
});

let t: TestApp;
let server: Server;
let base: string;
let serverId: string;
let inboundId: string;
let inboundTag: string;
const fellThrough: string[] = [];

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1000" });
  serverId = (await registerServer(t, await freePort(), { name: "Truth 1", hostname: "vpn.example.com" })).id;
  const template = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
  const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
  inboundId = inbound.id;
  inboundTag = inbound.tag;
  server = createServer(
    withCacheFastPath(t.deps.services.subscriptions, (req, res) => {
      fellThrough.push(`${req.method} ${req.url}`);
      t.app.routing(req, res);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

type Answer = { status: number; headers: Headers; body: string; viaFastify: boolean };

async function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const before = fellThrough.length;
  const res = await fetch(`${base}${path}`, {
    headers: { "user-agent": "test-client/1.0", ...headers },
    signal: AbortSignal.timeout(5000),
  });
  return {
    status: res.status,
    headers: res.headers,
    body: await res.text(),
    viaFastify: fellThrough.length > before,
  };
}

type User = { id: string; subscription_url: string; status: string };

async function newUser(name: string, body: Record<string, unknown> = {}): Promise<User> {
  const res = await request(t, "POST", "/api/users", { name, ...body });
  assert.equal(res.statusCode, 201, res.body);
  const user = res.json() as User;
  await grant(t, serverId, inboundId, { user_id: user.id });
  return user;
}

async function update(userId: string, body: Record<string, unknown>): Promise<User> {
  const res = await request(t, "PUT", `/api/users/${userId}`, body);
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as User;
}

/** What a lifecycle job or a traffic collection would write: straight to the row. */
async function setUsed(userId: string, usedBytes: number): Promise<void> {
  await t.deps.database.db
    .updateTable("users")
    .set({ used_bytes: usedBytes })
    .where("id", "=", userId)
    .execute();
}

const userinfo = async (userId: string) => (await get(`/sub/${userId}`)).headers.get("subscription-userinfo");

function remarks(body: string): string[] {
  return Buffer.from(body, "base64")
    .toString("utf8")
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((link) => decodeLink(link).remark);
}

async function changeCount(): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`SELECT count(*) AS n FROM subscription_changes`.execute(
    t.deps.database.db,
  );
  return Number(rows[0]?.n ?? 0);
}

describe("Subscription-Userinfo", () => {
  test("upload + download = used_bytes split as the counters are; total = the limit; expire = unix seconds", async () => {
    const expireAt = "2030-01-01T00:00:00.000Z";
    const user = await newUser("Userinfo", { data_limit_bytes: 10_000, expire_at: expireAt });
    await t.deps.database.db
      .updateTable("user_access")
      .set({ uplink_bytes: 100, downlink_bytes: 300 })
      .where("user_id", "=", user.id)
      .execute();
    await setUsed(user.id, 800);
    const expected = `upload=200; download=600; total=10000; expire=${Date.parse(expireAt) / 1000}`;
    const first = await get(`/sub/${user.subscription_url.split("/").at(-1)}`);
    assert.equal(first.headers.get("subscription-userinfo"), expected);
    const cached = await get(`/sub/${user.id}`);
    assert.equal(cached.viaFastify, false, "answered from memory");
    assert.equal(cached.headers.get("subscription-userinfo"), expected);
    const notModified = await get(`/sub/${user.id}`, { "if-none-match": cached.headers.get("etag") ?? "" });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.headers.get("subscription-userinfo"), expected);
    for (const format of FORMATS) {
      assert.equal(
        (await get(`/sub/${user.id}/${format}`)).headers.get("subscription-userinfo"),
        expected,
        format,
      );
    }
  });

  test("unlimited, never expiring, nothing used: all zeros", async () => {
    const user = await newUser("Zeros");
    assert.equal(await userinfo(user.id), "upload=0; download=0; total=0; expire=0");
  });

  test("growing usage adds no change (the totals in memory are up to the cache's max age old); a reset invalidates at once", async () => {
    const user = await newUser("Growing", { data_limit_bytes: 1_000_000 });
    await setUsed(user.id, 1000);
    const before = await userinfo(user.id);
    assert.equal(before, "upload=0; download=1000; total=1000000; expire=0");
    const changes = await changeCount();
    for (let i = 2; i <= 5; i++) await setUsed(user.id, i * 1000);
    // A collection's set-based UPDATE over every user.
    await sql`UPDATE users SET used_bytes = used_bytes + 1, lifetime_used_bytes = lifetime_used_bytes + 1`.execute(
      t.deps.database.db,
    );
    assert.equal(await changeCount(), changes, "no subscription change for growing usage");
    await t.deps.services.subscriptions.catchUp();
    const stale = await get(`/sub/${user.id}`);
    assert.equal(stale.viaFastify, false);
    assert.equal(stale.headers.get("subscription-userinfo"), before, "kept until the max age");
    await setUsed(user.id, 0);
    assert.equal(await changeCount(), changes + 1, "a reset is a change");
    await t.deps.services.subscriptions.catchUp();
    assert.equal(await userinfo(user.id), "upload=0; download=0; total=1000000; expire=0");
  });
});

describe("placeholders instead of links", () => {
  const realRemark = () => `Truth 1 ${inboundTag}`;

  async function everyFormat(user: User, name: string): Promise<void> {
    const base64 = await get(`/sub/${user.id}`);
    assert.equal(base64.status, 200);
    const lines = Buffer.from(base64.body, "base64").toString("utf8").split("\n");
    assert.equal(lines.length, 1, lines.join("\n"));
    const link = decodeLink(lines[0] as string);
    assert.deepEqual([link.protocol, link.host, link.port, link.remark], ["vless", "0.0.0.0", 1, name]);
    assert.equal((link.credential as { id: string }).id, NIL_UUID);
    const links = await get(`/sub/${user.id}/links`);
    assert.equal(links.body, lines[0]);
    const mihomo = parseYaml((await get(`/sub/${user.id}/mihomo`)).body) as {
      proxies: { name: string; server: string; port: number; uuid: string }[];
      "proxy-groups": { proxies: string[] }[];
    };
    assert.ok(validateMihomo(mihomo), JSON.stringify(validateMihomo.errors?.slice(0, 3)));
    assert.deepEqual(
      mihomo.proxies.map((p) => [p.name, p.server, p.port, p.uuid]),
      [[name, "0.0.0.0", 1, NIL_UUID]],
    );
    assert.ok(mihomo["proxy-groups"].some((group) => group.proxies.includes(name)));
    const singbox = JSON.parse((await get(`/sub/${user.id}/sing-box`)).body) as {
      outbounds: { tag: string; server?: string; outbounds?: string[] }[];
    };
    assert.ok(validateSingbox(singbox), JSON.stringify(validateSingbox.errors?.slice(0, 3)));
    assert.deepEqual(
      singbox.outbounds.filter((o) => o.server !== undefined).map((o) => [o.tag, o.server]),
      [[name, "0.0.0.0"]],
    );
    const xray = JSON.parse((await get(`/sub/${user.id}/xray-json`)).body) as { remarks: string }[];
    assert.deepEqual(
      xray.map((config) => config.remarks),
      [name],
    );
    assert.ok(!JSON.stringify(xray).includes(realRemark()));
    // Served from memory as well.
    const again = await get(`/sub/${user.id}`);
    assert.deepEqual([again.viaFastify, again.body], [false, base64.body]);
  }

  test("disabled: 'disabled' in every format, the real links at once when enabled again", async () => {
    const user = await newUser("Paused");
    assert.deepEqual(remarks((await get(`/sub/${user.id}`)).body), [realRemark()]);
    assert.equal((await get(`/sub/${user.id}`)).viaFastify, false, "cached before the change");
    assert.equal((await update(user.id, { status: "disabled" })).status, "disabled");
    await everyFormat(user, "disabled");
    await update(user.id, { status: "active" });
    assert.deepEqual(remarks((await get(`/sub/${user.id}`)).body), [realRemark()]);
  });

  test("expired: 'expired on <day>'; a later expiry re-admits", async () => {
    const yesterday = new Date(Date.now() - DAY_MS);
    const user = await newUser("Expired", { expire_at: yesterday.toISOString() });
    assert.equal(user.status, "expired");
    await everyFormat(user, `expired on ${yesterday.toISOString().slice(0, 10)}`);
    await update(user.id, { expire_at: new Date(Date.now() + 30 * DAY_MS).toISOString() });
    assert.deepEqual(remarks((await get(`/sub/${user.id}`)).body), [realRemark()]);
  });

  test("limited: with a monthly reset the day it resets, without one just the reason; a raised limit re-admits", async () => {
    const user = await newUser("Limited");
    await get(`/sub/${user.id}`);
    await setUsed(user.id, 2000);
    assert.equal(
      (await update(user.id, { data_limit_bytes: 1000, data_limit_reset: "month" })).status,
      "limited",
    );
    const now = new Date();
    const firstOfNext = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    await everyFormat(user, `data limit reached, resets on ${firstOfNext.toISOString().slice(0, 10)}`);
    assert.equal(
      (await get(`/sub/${user.id}`)).headers.get("subscription-userinfo"),
      "upload=0; download=2000; total=1000; expire=0",
      "the userinfo still tells the numbers",
    );
    await update(user.id, { data_limit_reset: "no_reset" });
    assert.deepEqual(remarks((await get(`/sub/${user.id}`)).body), ["data limit reached"]);
    await update(user.id, { data_limit_bytes: 5000 });
    assert.deepEqual(remarks((await get(`/sub/${user.id}`)).body), [realRemark()]);
  });

  test("on_hold: the real links (the clock starts with the first traffic)", async () => {
    const user = await newUser("Waiting", { status: "on_hold", on_hold_duration_seconds: 86_400 });
    assert.equal(user.status, "on_hold");
    assert.deepEqual(remarks((await get(`/sub/${user.id}`)).body), [realRemark()]);
  });

  test("the page tells the status, the usage against the limit and the expiry", async () => {
    const browser = {
      accept: "text/html,application/xhtml+xml",
      "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/133.0",
      "accept-language": "en",
    };
    const expireAt = new Date(Date.now() + 40 * DAY_MS).toISOString();
    const user = await newUser("Page", { expire_at: expireAt, data_limit_bytes: 2 * 2 ** 20 });
    // The text of <b attribute>, without the <bdi> isolates around its numbers.
    const text = (html: string, attribute: string) =>
      new RegExp(`<b ${attribute}>(.*?)</b>`).exec(html)?.[1]?.replace(/<\/?bdi>/g, "");
    let page = (await get(`/sub/${user.id}`, browser)).body;
    assert.deepEqual(
      [text(page, "data-status"), text(page, "data-used"), text(page, "data-expires")],
      ["active", "0 B / 2.0 MiB", expireAt.slice(0, 10)],
    );
    await setUsed(user.id, 3 * 2 ** 20);
    assert.equal((await update(user.id, { data_limit_bytes: 2 * 2 ** 20 })).status, "limited");
    page = (await get(`/sub/${user.id}`, browser)).body;
    assert.deepEqual(
      [text(page, "data-status"), text(page, "data-used")],
      ["data limit reached", "3.0 MiB / 2.0 MiB"],
    );
    assert.match(page, /\.bar i\{width:100%\}/);
  });

  test("a user without grants gets the placeholder too", async () => {
    const res = await request(t, "POST", "/api/users", { name: "No grants", status: "disabled" });
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(remarks((await get(`/sub/${(res.json() as User).id}`)).body), ["disabled"]);
  });
});

describe("invalidation through the change feed", () => {
  test("each lifecycle column is one change; names of other columns are none", async () => {
    const user = await newUser("Columns");
    const db = t.deps.database.db;
    const set = async (values: Record<string, unknown>) => {
      const before = await changeCount();
      await db.updateTable("users").set(values).where("id", "=", user.id).execute();
      return (await changeCount()) - before;
    };
    assert.equal(await set({ status: "disabled" }), 1);
    assert.equal(await set({ status: "disabled" }), 0, "the same value is no change");
    assert.equal(await set({ data_limit_bytes: 10 }), 1);
    assert.equal(await set({ data_limit_reset: "week" }), 1);
    assert.equal(await set({ expire_at: new Date(Date.now() + DAY_MS).toISOString() }), 1);
    assert.equal(await set({ last_reset_at: new Date().toISOString() }), 1);
    assert.equal(await set({ used_bytes: 50 }), 0);
    assert.equal(await set({ used_bytes: 0 }), 1);
    assert.equal(await set({ online_at: new Date().toISOString(), lifetime_used_bytes: 99 }), 0);
    assert.equal(await set({ sub_updated_at: new Date().toISOString(), sub_last_user_agent: "x" }), 0);
  });

  test("a status written straight to the database (as a lifecycle job does) reaches another instance within its interval", async () => {
    const other = await createTestApp({ PORTCULLIS_SUB_CACHE_SYNC_MS: "200" }, { sameDatabaseAs: t });
    const subscriptions = other.deps.services.subscriptions;
    const jobs = startJobs(
      [subscriptionCacheJob({ subscriptions, logger: other.deps.logger, intervalMs: 200, warm: false })],
      other.deps.logger,
    );
    const inject = async (id: string) =>
      remarks((await other.app.inject({ method: "GET", url: `/sub/${id}` })).body);
    try {
      const user = await newUser("Elsewhere");
      await subscriptions.catchUp();
      assert.deepEqual(await inject(user.id), [`Truth 1 ${inboundTag}`]);
      const { hits } = subscriptions.stats();
      await inject(user.id);
      assert.equal(subscriptions.stats().hits, hits + 1, "cached on the other instance");
      await t.deps.database.db
        .updateTable("users")
        .set({ status: "expired", expire_at: "2026-01-02T00:00:00.000Z" })
        .where("id", "=", user.id)
        .execute();
      await waitFor(async () => (await inject(user.id))[0] === "expired on 2026-01-02", {
        what: "the placeholder on the other instance",
        timeoutMs: 5000,
        intervalMs: 20,
      });
      // Within the wait's 5 s, far below the cache's 300 s max age: the change came by the feed.
      // How fast is a benchmark's question, not a test's (a loaded machine stretches it).
    } finally {
      await jobs.stop();
      await other.close();
    }
  });
});

describe("placeholder texts in /api/subscription-settings", () => {
  test("defaults; changed texts reach cached placeholders at once; back to the defaults", async () => {
    const settings = (await request(t, "GET", "/api/subscription-settings")).json() as Record<
      string,
      unknown
    >;
    assert.deepEqual(
      [
        settings.placeholder_disabled,
        settings.placeholder_expired,
        settings.placeholder_limited,
        settings.placeholder_limited_until,
      ],
      ["disabled", "expired on {date}", "data limit reached", "data limit reached, resets on {date}"],
    );
    const disabled = await newUser("Texts", { status: "disabled" });
    const expired = await newUser("Texts expired", { expire_at: "2026-03-04T05:06:07.000Z" });
    assert.deepEqual(remarks((await get(`/sub/${disabled.id}`)).body), ["disabled"]);
    assert.equal((await get(`/sub/${disabled.id}`)).viaFastify, false);
    const put = await request(t, "PUT", "/api/subscription-settings", {
      placeholder_disabled: "⛔ paused – ask @support",
      placeholder_expired: "abgelaufen am {date} ({date})",
    });
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual(remarks((await get(`/sub/${disabled.id}`)).body), ["⛔ paused – ask @support"]);
    assert.deepEqual(remarks((await get(`/sub/${expired.id}`)).body), [
      "abgelaufen am 2026-03-04 (2026-03-04)",
    ]);
    const reset = await request(t, "PUT", "/api/subscription-settings", {
      placeholder_disabled: "disabled",
      placeholder_expired: "expired on {date}",
    });
    assert.equal(reset.statusCode, 200, reset.body);
    assert.deepEqual(remarks((await get(`/sub/${disabled.id}`)).body), ["disabled"]);
  });

  test("unknown placeholders are 422 with the field's path; empty or multi-line texts 400", async () => {
    const put = (body: Record<string, unknown>) => request(t, "PUT", "/api/subscription-settings", body);
    const problems = expectProblem(
      await put({ placeholder_expired: "until {day}", placeholder_disabled: "off since {date}" }),
      422,
      "subscription_settings_invalid",
    );
    assert.deepEqual(problems.map((p) => p.path).sort(), [
      "body.placeholder_disabled",
      "body.placeholder_expired",
    ]);
    for (const text of ["", "two\nlines", "x".repeat(201)]) {
      assert.equal((await put({ placeholder_limited: text })).statusCode, 400, JSON.stringify(text));
    }
    const settings = (await request(t, "GET", "/api/subscription-settings")).json() as Record<
      string,
      unknown
    >;
    assert.equal(settings.placeholder_limited, "data limit reached", "nothing was saved");
  });
});

describe("sub_updated_at and sub_last_user_agent", () => {
  const readUser = async (id: string) =>
    (await request(t, "GET", `/api/users/${id}`)).json() as {
      sub_updated_at: string | null;
      sub_last_user_agent: string | null;
    };

  test("noted for misses and fast-path hits without a write, written by a flush; long agents cut; unknown keys never", async () => {
    const subscriptions = t.deps.services.subscriptions;
    await subscriptions.flushFetches();
    const user = await newUser("Fetched");
    const token = user.subscription_url.split("/").at(-1) as string;
    const started = Date.now();
    const miss = await get(`/sub/${token}`, { "user-agent": "v2rayNG/1.9.45" });
    assert.equal(miss.viaFastify, true);
    const hit = await get(`/sub/${token}/mihomo`, { "user-agent": "clash.meta/1.19" });
    assert.equal(hit.viaFastify, false, "a fast-path hit");
    assert.equal((await readUser(user.id)).sub_updated_at, null, "nothing written per request");
    assert.equal(subscriptions.fetches.size, 1, "one entry per user, however many fetches");
    await get(`/sub/ffffffffffffffffffffffffffffffff`, { "user-agent": "scanner/0.1" });
    await get(`/sub/${randomUUID()}`, { "user-agent": "scanner/0.1" });
    assert.equal(subscriptions.fetches.size, 1, "unknown keys are not noted");
    assert.equal(await subscriptions.flushFetches(), 1);
    const written = await readUser(user.id);
    assert.equal(written.sub_last_user_agent, "clash.meta/1.19");
    const at = Date.parse(written.sub_updated_at ?? "");
    assert.ok(at >= started - 1000 && at <= Date.now(), written.sub_updated_at ?? "null");
    const scanned = await t.deps.database.db
      .selectFrom("users")
      .select("id")
      .where("sub_last_user_agent", "=", "scanner/0.1")
      .execute();
    assert.deepEqual(scanned, []);
    const again = await get(`/sub/${token}/mihomo`, { "user-agent": "clash.meta/1.19" });
    assert.equal(again.viaFastify, false);
    assert.equal(subscriptions.fetches.size, 0, "the same client again within the minute: not noted again");

    await get(`/sub/${user.id}`, { "user-agent": `Happ/${"9".repeat(1000)}` });
    await subscriptions.flushFetches();
    const long = await readUser(user.id);
    assert.equal(long.sub_last_user_agent, `Happ/${"9".repeat(MAX_USER_AGENT - 5)}`);
    assert.ok(Date.parse(long.sub_updated_at ?? "") >= at);
    assert.equal(await subscriptions.flushFetches(), 0, "nothing noted since");
  });

  test("a flush of 2,500 users is set-based (chunks of 1,000) and never moves sub_updated_at back", async () => {
    const db = t.deps.database.db;
    const now = new Date().toISOString();
    const ids = Array.from({ length: 2500 }, () => randomUUID());
    for (let i = 0; i < ids.length; i += 500) {
      await db
        .insertInto("users")
        .values(
          ids
            .slice(i, i + 500)
            .map((id, j) => ({ id, name: `bulk ${i + j}`, created_at: now, updated_at: now })),
        )
        .execute();
    }
    const log = t.deps.services.subscriptions.fetches;
    for (const id of ids) log.note(id, "bulk-agent/2");
    assert.equal(await t.deps.services.subscriptions.flushFetches(), 2500);
    const count = async (ua: string) =>
      Number(
        (
          await db
            .selectFrom("users")
            .select((eb) => eb.fn.countAll().as("n"))
            .where("sub_last_user_agent", "=", ua)
            .executeTakeFirstOrThrow()
        ).n,
      );
    assert.equal(await count("bulk-agent/2"), 2500);
    const repository = new SubscriptionsRepository(db, t.deps.database.dialect);
    const first = ids[0] as string;
    await repository.recordFetches([{ userId: first, at: "2000-01-01T00:00:00.000Z", userAgent: "older/1" }]);
    assert.equal(await count("older/1"), 0, "an older fetch (another instance's late flush) does not win");
    await repository.recordFetches([{ userId: first, at: "2999-01-01T00:00:00.000Z", userAgent: null }]);
    const row = await db
      .selectFrom("users")
      .select(["sub_last_user_agent"])
      .where("id", "=", first)
      .executeTakeFirstOrThrow();
    assert.equal(row.sub_last_user_agent, null);
    await db.deleteFrom("users").where("id", "in", ids).execute();
  });
});
