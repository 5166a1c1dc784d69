// `portcullis import marzban` (issue 51) with a 1,000-user Marzban fixture (test/support/peer-fixtures.ts)
// against a real V2Ray core, on whichever dialect DATABASE_URL selects: a dry run writes nothing; a
// run stopped after three batches keeps them and the next run completes it; the counts are the
// fixture's (read from its SQLite file here, not from the importer); users keep their fields and
// credentials; a further run changes nothing; the grants reach the core.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { grantsOf, probeCore, startConvergence } from "../../../test/support/convergence.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import {
  MARZBAN_INBOUNDS,
  marzbanXrayConfig,
  writeMarzbanSqlite,
} from "../../../test/support/peer-fixtures.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { expectCarries, registerServer, startClient } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import {
  CleanupStack,
  startHttpServer,
  startV2rayServer,
  tempDir,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";
import { run } from "../../cli/import.ts";
import { loadSqlite } from "../../db/connection.ts";
import { read } from "../../db/dialect.ts";
import { NO_PASSWORD } from "./import.repository.ts";
import type { ImportReport } from "./import.service.ts";
import { signMarzbanJwt, signMarzbanLegacy } from "./legacy-tokens.ts";
import { isoOf } from "./peer.ts";

const needs = requires("v2ray");
const N = 1000;
const stack = new CleanupStack();
let t: TestApp;
let core: V2rayServer;
let serverId: string;
let dbPath: string;
let secret: string;
let httpPort: number;
const BODY = Buffer.from("carried through the imported grant\n");

type SourceUser = Record<string, string | number | null>;
let source: {
  users: SourceUser[];
  proxies: { user_id: number; type: string; settings: string }[];
  excluded: number;
  logs: Map<number, { total: number; last: string }>;
};

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "5000" });
  core = await startV2rayServer(stack.add);
  serverId = (await registerServer(t, core.apiPort)).id;
  const dir = tempDir(stack.add);
  dbPath = join(dir, "db.sqlite3");
  secret = writeMarzbanSqlite(dbPath, N).secret;
  httpPort = await startHttpServer(stack.add, BODY);
  const ports: Record<string, number> = {};
  for (const inbound of MARZBAN_INBOUNDS) ports[inbound.tag] = await freePort();
  writeFileSync(join(dir, "xray_config.json"), JSON.stringify(marzbanXrayConfig(ports)));
  const Database = loadSqlite();
  const db = new Database(dbPath, { readonly: true });
  try {
    source = {
      users: db.prepare("SELECT * FROM users ORDER BY id").all() as SourceUser[],
      proxies: db.prepare("SELECT user_id, type, settings FROM proxies").all() as typeof source.proxies,
      excluded: (db.prepare("SELECT count(*) AS n FROM exclude_inbounds_association").get() as { n: number })
        .n,
      logs: new Map(
        (
          db
            .prepare(
              "SELECT user_id, sum(used_traffic_at_reset) AS total, max(reset_at) AS last FROM user_usage_logs GROUP BY user_id",
            )
            .all() as { user_id: number; total: number; last: string }[]
        ).map((row) => [row.user_id, row]),
      ),
    };
  } finally {
    db.close();
  }
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

async function importOnce(extra: string[] = [], onBatch?: (done: number) => void): Promise<ImportReport> {
  let out = "";
  let err = "";
  const code = await run(
    ["marzban", "--db", dbPath, "--server", serverId, "--json", "--batch", "100", ...extra],
    {
      deps: t.deps,
      write: (text) => {
        out += text;
      },
      writeError: (text) => {
        err += text;
      },
      ...(onBatch === undefined ? {} : { onBatch }),
    },
  );
  assert.equal(code, 0, `${out}${err}`);
  return JSON.parse(out) as ImportReport;
}

/** Row counts of every table an import writes. */
async function counts(): Promise<
  Record<string, number> & { users: number; import_links: number; admins: number; user_access: number }
> {
  const db = t.deps.database.db;
  const tables = [
    "users",
    "user_access",
    "server_inbounds",
    "templates",
    "inbound_hosts",
    "admins",
    "import_links",
    "import_secrets",
  ] as const;
  const result = { users: 0, import_links: 0, admins: 0, user_access: 0 } as Record<string, number> & {
    users: number;
    import_links: number;
    admins: number;
    user_access: number;
  };
  for (const table of tables) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .executeTakeFirstOrThrow();
    result[table] = Number(row.n);
  }
  return result;
}

const countType = (type: string) => source.proxies.filter((p) => p.type === type).length;

describe("portcullis import marzban", needs, () => {
  test("a dry run reports what it would do and writes nothing", async () => {
    const before = await counts();
    const report = await importOnce(["--dry-run"]);
    assert.equal(report.dry_run, true);
    assert.equal(report.users.found, N);
    assert.equal(report.users.created, N);
    assert.equal(report.inbounds.created, MARZBAN_INBOUNDS.length);
    assert.deepEqual(await counts(), before);
  });

  test("stopped after three batches, it keeps them; run again, it completes", async () => {
    const before = await counts();
    await assert.rejects(
      importOnce([], (done) => {
        if (done >= 300) throw new Error("killed");
      }),
      /killed/,
    );
    const partial = await counts();
    assert.equal(partial.users - before.users, 300, "three committed batches of 100");
    assert.equal(partial.import_links - before.import_links, 300);

    const report = await importOnce();
    assert.equal(report.users.found, N);
    assert.equal(report.users.created, N - 300);
    assert.equal(report.users.already, 300);
    const after = await counts();
    assert.equal(after.users - before.users, N);
    assert.equal(after.import_links - before.import_links, N);
    assert.equal(after.admins - before.admins, 2, "sudo and reseller");
    assert.equal(after.import_secrets, 1);
    // One inbound per protocol; V2Ray's Shadowsocks inbound holds one user, so its grants stay out.
    const expectedGrants = countType("vless") + countType("vmess") - source.excluded + countType("trojan");
    assert.equal(after.user_access - before.user_access, expectedGrants, JSON.stringify(report.left_out));
    assert.equal(report.grants.left_out, countType("shadowsocks"));
    assert.equal(report.inbounds.created + report.inbounds.already, MARZBAN_INBOUNDS.length);
    assert.equal(report.hosts.found, 2 * MARZBAN_INBOUNDS.length);
    // The CDN hosts name a TLS server name on plain inbounds: Portcullis refuses them, and says so.
    assert.equal(report.hosts.created + report.hosts.already, MARZBAN_INBOUNDS.length);
    assert.equal(report.hosts.left_out, MARZBAN_INBOUNDS.length);
    assert.ok(
      Object.keys(report.left_out).some((reason) => reason.startsWith("hosts: the host does not fit")),
    );
    assert.ok(
      Object.keys(report.left_out).some((reason) => reason.includes("cannot take more users")),
      JSON.stringify(report.left_out),
    );
  });

  test("users keep their fields and credentials", async () => {
    const db = t.deps.database.db;
    const links = await db.selectFrom("import_links").select(["key", "user_id", "revoked_at"]).execute();
    const byName = new Map(links.map((l) => [l.key, l]));
    const statuses: Record<string, number> = {};
    for (const row of source.users) {
      const link = byName.get(String(row.username));
      assert.ok(link !== undefined, `${row.username} imported`);
      const user = await db
        .selectFrom("users")
        .selectAll()
        .where("id", "=", link.user_id)
        .executeTakeFirstOrThrow();
      statuses[String(user.status)] = (statuses[String(user.status)] ?? 0) + 1;
      const id = Number(row.id);
      if (id % 37 !== 0 && id % 10 !== 0) continue; // field by field: every 10th (on hold) and 37th user
      const logs = source.logs.get(id);
      assert.equal(user.name, row.username);
      assert.equal(user.status, row.status);
      assert.equal(Number(user.used_bytes), Number(row.used_traffic));
      assert.equal(Number(user.lifetime_used_bytes), Number(row.used_traffic) + (logs?.total ?? 0));
      assert.equal(user.data_limit_bytes === null ? null : Number(user.data_limit_bytes), row.data_limit);
      assert.equal(user.data_limit_reset, row.data_limit_reset_strategy);
      assert.equal(
        read.optionalTimestamp(user.expire_at),
        row.expire === null ? null : new Date(Number(row.expire) * 1000).toISOString(),
      );
      assert.equal(
        user.on_hold_duration_seconds === null ? null : Number(user.on_hold_duration_seconds),
        row.on_hold_expire_duration,
      );
      assert.equal(read.optionalTimestamp(user.on_hold_timeout_at), isoOf(row.on_hold_timeout));
      assert.equal(read.timestamp(user.created_at), isoOf(row.created_at));
      assert.equal(read.optionalTimestamp(user.online_at), isoOf(row.online_at));
      assert.equal(read.optionalTimestamp(user.last_reset_at), logs === undefined ? null : isoOf(logs.last));
      assert.equal(user.comment, row.note);
      assert.equal(read.optionalTimestamp(link.revoked_at), isoOf(row.sub_revoked_at));
      const grants = await db
        .selectFrom("user_access as a")
        .innerJoin("server_inbounds as i", "i.id", "a.server_inbound_id")
        .select(["a.credential", "i.link_params"])
        .where("a.user_id", "=", link.user_id)
        .execute();
      const held = new Map(grants.map((g) => [JSON.parse(g.link_params).protocol as string, g.credential]));
      for (const proxy of source.proxies.filter((p) => p.user_id === id && p.type !== "shadowsocks")) {
        const settings = JSON.parse(proxy.settings) as { id?: string; password?: string };
        const excluded = id % 31 === 0 && proxy.type === "vmess";
        assert.equal(
          held.get(proxy.type),
          excluded ? undefined : (settings.id ?? settings.password),
          `${row.username} ${proxy.type}`,
        );
      }
    }
    const expected: Record<string, number> = {};
    for (const row of source.users) expected[String(row.status)] = (expected[String(row.status)] ?? 0) + 1;
    assert.deepEqual(statuses, expected);
    const admins = await db
      .selectFrom("admins")
      .select(["username", "role", "password_hash"])
      .where("password_hash", "=", NO_PASSWORD)
      .execute();
    assert.deepEqual(admins.map((a) => [a.username, a.role]).sort(), [
      ["reseller", "operator"],
      ["sudo", "operator"],
    ]);
  });

  test("a further run changes nothing, and the grants reach the core", async () => {
    const before = await counts();
    const users = await t.deps.database.db.selectFrom("users").selectAll().orderBy("id").execute();
    const report = await importOnce();
    for (const kind of ["users", "grants", "inbounds", "hosts", "admins"] as const) {
      assert.equal(report[kind].created, 0, kind);
    }
    assert.equal(report.users.already, N);
    assert.equal(report.subscription_urls.secret, "already");
    assert.deepEqual(await counts(), before);
    assert.deepEqual(await t.deps.database.db.selectFrom("users").selectAll().orderBy("id").execute(), users);

    const { running } = startConvergence(t.deps, t.deps.logger, { reconcileMs: 200 });
    try {
      const grants = await grantsOf(t.deps, serverId);
      const admitted = new Set(
        (
          await t.deps.database.db
            .selectFrom("user_access as a")
            .innerJoin("users as u", "u.id", "a.user_id")
            .select("a.proxy_user_id")
            .where("a.server_id", "=", serverId)
            .where("u.status", "in", ["active", "on_hold"])
            .execute()
        ).map((row) => row.proxy_user_id),
      );
      await waitFor(
        async () => {
          const rows = await t.deps.database.db
            .selectFrom("user_access")
            .select("id")
            .where("server_id", "=", serverId)
            .where("sync_state", "=", "pending")
            .execute();
          return rows.length === 0;
        },
        { timeoutMs: 120_000, what: "the imported grants to be pushed" },
      );
      const probe = await probeCore(
        core.apiAddress,
        grants.filter((g) => admitted.has(g.email)).slice(0, 300),
      );
      assert.equal(probe.absent.length, 0, `absent on the core: ${probe.absent.slice(0, 5).join(", ")}`);
    } finally {
      await running.stop();
    }
  });

  test("old Marzban URLs answer the imported users and their links carry traffic; void, badly signed and unknown tokens are 404", async () => {
    const get = (url: string) =>
      t.app.inject({ method: "GET", url, headers: { "user-agent": "v2rayNG/1.8.5" } });
    const nowS = Math.floor(Date.now() / 1000);
    const row = source.users.find((u) => u.status === "active" && u.sub_revoked_at === null);
    assert.ok(row !== undefined);
    const name = String(row.username);
    const vless = source.proxies.find((p) => p.user_id === row.id && p.type === "vless");
    const uuid = (JSON.parse(String(vless?.settings)) as { id: string }).id;
    for (const token of [signMarzbanJwt(name, nowS, secret), signMarzbanLegacy(name, nowS, secret)]) {
      const res = await get(`/sub/${token}/links`);
      assert.equal(res.statusCode, 200, res.body);
      const link = res.body.split("\n").find((line) => line.startsWith("vless://"));
      assert.ok(link?.includes(uuid), "the VLESS link carries the user's Marzban UUID");
      const base64 = await get(`/sub/${token}/v2ray`);
      assert.equal(base64.statusCode, 200);
      assert.ok(Buffer.from(base64.body, "base64").toString("utf8").includes(uuid));
      assert.equal((await get(`/sub/${token}`)).statusCode, 200);
      const info = await get(`/sub/${token}/info`);
      assert.equal(info.statusCode, 200, info.body);
      assert.equal(info.json().username, name);
      assert.equal(info.json().used_traffic, Number(row.used_traffic));
    }
    const links = (await get(`/sub/${signMarzbanJwt(name, nowS, secret)}/links`)).body.split("\n");
    const socksPort = await startClient(
      stack.add,
      "v2ray",
      decodeLink(links.find((l) => l.startsWith("vless://")) ?? ""),
    );
    await expectCarries(socksPort, httpPort, BODY, "the link from the old Marzban URL");

    const revoked = source.users.find((u) => u.status === "active" && u.sub_revoked_at !== null);
    assert.ok(revoked !== undefined);
    const revokedS = Math.floor(Date.parse(isoOf(revoked.sub_revoked_at) ?? "") / 1000);
    const before = signMarzbanJwt(String(revoked.username), revokedS - 60, secret);
    const after = signMarzbanJwt(String(revoked.username), nowS, secret);
    const forged = signMarzbanJwt(name, nowS, "not the secret");
    const good = signMarzbanJwt(name, nowS, secret);
    const tampered = `${good.slice(0, -2)}${good.endsWith("AA") ? "BB" : "AA"}`;
    for (const [what, url] of [
      ["issued before sub_revoked_at", `/sub/${before}`],
      ["issued before sub_revoked_at (info)", `/sub/${before}/info`],
      [
        "older form, issued before sub_revoked_at",
        `/sub/${signMarzbanLegacy(String(revoked.username), revokedS - 60, secret)}`,
      ],
      ["signed with another secret", `/sub/${forged}`],
      ["older form signed with another secret", `/sub/${signMarzbanLegacy(name, nowS, "nope")}`],
      ["a changed signature", `/sub/${tampered}/links`],
      ["an unknown user", `/sub/${signMarzbanJwt("nobody_here", nowS, secret)}`],
      ["an unknown client type", `/sub/${good}/outline`],
      ["not a token", "/sub/not-a-token-at-all"],
    ] as const) {
      assert.equal((await get(url)).statusCode, 404, what);
    }
    assert.equal((await get(`/sub/${after}`)).statusCode, 200, "a token issued after sub_revoked_at");
  });
});
