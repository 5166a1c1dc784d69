// Attacks on an import (issue 51). Hostile names in the peer's database: usernames with every line
// break YAML 1.1 knows, NUL, C0/C1 controls, bidi overrides, 100,000 characters, and names full of
// HTML and YAML specials; notes with line breaks and NUL; an admin named with markup. The unsafe ones
// are left out and counted with their reason; the others come over exactly, and every format their
// OLD Marzban URL serves is read by the strictest reader of that format (test/support/strict-readers.ts).
// Then encoded-path attacks on the old-URL routes, sent as raw bytes to a listening app (so the /sub
// fast path sees them too): %2e%2e, %2f, %00, double encoding, bad escapes, overlong and forged tokens
// are 404, never a 500, on whichever dialect DATABASE_URL selects. Cores in memory: no traffic here.
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink, escapingProblems } from "../../../test/support/link-decoder.ts";
import { MemoryFleet } from "../../../test/support/memory-core.ts";
import { writeMarzbanSqlite } from "../../../test/support/peer-fixtures.ts";
import { registerServer } from "../../../test/support/provisioning.ts";
import { rawRequest } from "../../../test/support/raw-http.ts";
import { headerProblems, readYaml } from "../../../test/support/strict-readers.ts";
import { CleanupStack, tempDir } from "../../../test/support/v2ray.ts";
import { run } from "../../cli/import.ts";
import { loadSqlite } from "../../db/connection.ts";
import type { ImportReport } from "./import.service.ts";
import { signMarzbanJwt, signMarzbanLegacy } from "./legacy-tokens.ts";

const POC = 'poc\u2028external-controller: 0.0.0.0:9090\u2028secret: ""\u2028#';
/** Usernames an import must leave out: not one line of safe text, or too long. */
const REFUSED = [
  POC,
  POC.replaceAll("\u2028", "\u2029"),
  POC.replaceAll("\u2028", "\u0085"),
  POC.replaceAll("\u2028", "\r"),
  POC.replaceAll("\u2028", "\n"),
  "nul\u0000after",
  "c0 \u0001\u001b[31m red",
  "c1 \u0080\u009f del \u007f",
  "\u202Egnp.exe\u202C",
  "x".repeat(100_000),
];
/** Usernames that are names like any other: they come over exactly, and no format breaks on them. */
const ACCEPTED = [
  "<script>alert(1)</script>",
  `quotes " ' \` \\ &amp; end`,
  "key: value # not a comment",
  "- item &anchor *alias !tag |",
  "{{all}} {USERNAME} %25 %E2%80%A8",
  "🚀 Frankfurt 𝒳 Алиса 東京",
];
const MIHOMO_KEYS = [
  "mixed-port",
  "allow-lan",
  "mode",
  "log-level",
  "ipv6",
  "dns",
  "proxies",
  "proxy-groups",
  "rules",
];

const fleet = new MemoryFleet();
const stack = new CleanupStack();
let t: TestApp;
let port: number;
let secret: string;
let report: ImportReport;
let twin: string;
let shouted: string;
const names = new Map<number, string>();

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "2000" }, { cores: fleet });
  stack.add(() => t.close());
  fleet.add(32_100);
  const server = await registerServer(t, 32_100);
  const dir = tempDir(stack.add);
  const dbPath = join(dir, "db.sqlite3");
  secret = writeMarzbanSqlite(dbPath, 40).secret;
  // The hostile values straight into the peer's tables, as a Marzban that never checked them would hold.
  const Database = loadSqlite();
  const db = new Database(dbPath);
  try {
    const setUser = db.prepare(
      "UPDATE users SET username = ?, note = ?, status = 'active', expire = NULL, data_limit = NULL, sub_revoked_at = NULL WHERE id = ?",
    );
    [...REFUSED, ...ACCEPTED].forEach((name, i) => {
      setUser.run(name, i % 2 === 0 ? "note\u2028evil: yes" : "note\u0000nul", i + 1);
    });
    db.prepare("UPDATE admins SET username = ? WHERE id = 2").run("<img src=x onerror=alert(1)>");
    // UUIDs are case-blind: user 31's VLESS id is user 30's in capitals, user 32's VMess id is in capitals.
    const idOf = (user: number, type: string) =>
      (
        db
          .prepare("SELECT json_extract(settings, '$.id') AS id FROM proxies WHERE user_id = ? AND type = ?")
          .get(user, type) as { id: string }
      ).id;
    const setId = db.prepare(
      "UPDATE proxies SET settings = json_set(settings, '$.id', ?) WHERE user_id = ? AND type = ?",
    );
    twin = idOf(30, "vless");
    setId.run(twin.toUpperCase(), 31, "vless");
    shouted = idOf(32, "vmess").toUpperCase();
    setId.run(shouted, 32, "vmess");
    for (const id of [30, 31, 32]) {
      names.set(
        id,
        (db.prepare("SELECT username FROM users WHERE id = ?").get(id) as { username: string }).username,
      );
    }
  } finally {
    db.close();
  }
  let out = "";
  let err = "";
  const code = await run(["marzban", "--db", dbPath, "--server", server.id, "--json"], {
    deps: t.deps,
    write: (text) => {
      out += text;
    },
    writeError: (text) => {
      err += text;
    },
  });
  assert.equal(code, 0, `${out}${err}`);
  report = JSON.parse(out) as ImportReport;
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  port = (t.app.server.address() as { port: number }).port;
});
after(() => stack.run());

const token = (name: string) => signMarzbanJwt(name, Math.floor(Date.now() / 1000), secret);

async function get(target: string, headers: Record<string, string> = {}) {
  const res = await rawRequest(port, { target, headers: { "user-agent": "v2rayNG/1.8.5", ...headers } });
  assert.deepEqual(
    headerProblems(res.headers),
    [],
    `${target.slice(0, 80)}: every header is printable ASCII`,
  );
  return res;
}

describe("an import of hostile names", () => {
  test("UUIDs differing only in case are one credential: stored in lower case, a twin left out", async () => {
    const db = t.deps.database.db;
    const credentialsOf = (id: number, protocol: string) =>
      db
        .selectFrom("user_access as a")
        .innerJoin("import_links as l", "l.user_id", "a.user_id")
        .innerJoin("server_inbounds as i", "i.id", "a.server_inbound_id")
        .select(["a.credential", "i.link_params"])
        .where("l.key", "=", names.get(id) ?? "")
        .execute()
        .then((rows) =>
          rows
            .filter((row) => JSON.parse(row.link_params).protocol === protocol)
            .map((row) => row.credential),
        );
    assert.deepEqual(await credentialsOf(30, "vless"), [twin]);
    assert.deepEqual(await credentialsOf(31, "vless"), [], "its twin in capitals is the same UUID");
    assert.ok((report.left_out["grants: another user has the same credential on the inbound"] ?? 0) >= 1);
    assert.deepEqual(await credentialsOf(32, "vmess"), [shouted.toLowerCase()]);
    const all = await db.selectFrom("user_access").select(["server_inbound_id", "credential"]).execute();
    const folded = new Set(all.map((row) => `${row.server_inbound_id} ${row.credential.toLowerCase()}`));
    assert.equal(folded.size, all.length, "no two grants of one inbound share a credential, case aside");
  });

  test("unsafe names are left out and counted; safe ones come over exactly, unsafe notes dropped", async () => {
    assert.equal(report.users.found, 40);
    assert.equal(report.users.left_out, REFUSED.length, JSON.stringify(report.left_out));
    assert.equal(
      report.left_out["users: name is not one line of safe text (1-128 characters)"],
      REFUSED.length,
    );
    assert.equal(report.users.created, 40 - REFUSED.length);
    assert.equal(report.admins.left_out, 1, "the admin named with markup");
    const rows = await t.deps.database.db
      .selectFrom("users")
      .select(["name", "comment"])
      .where("name", "in", ACCEPTED)
      .execute();
    assert.deepEqual(rows.map((r) => r.name).sort(), [...ACCEPTED].sort());
    for (const row of rows) assert.equal(row.comment, null, "a note with U+2028 or NUL is left out");
    assert.ok(
      (report.left_out["users: note left out (not safe text, or over 1000 characters)"] ?? 0) >=
        ACCEPTED.length,
    );
    for (const name of REFUSED)
      assert.equal((await get(`/sub/${token(name.slice(0, 200))}/info`)).status, 404, "not imported");
  });

  for (const name of ACCEPTED) {
    test(`every format of the old URL of ${JSON.stringify(name)} reads strictly`, async () => {
      const key = token(name);
      const info = await get(`/sub/${key}/info`);
      assert.equal(info.status, 200, info.body);
      assert.equal((JSON.parse(info.body) as { username: string }).username, name);

      const clash = await get(`/sub/${key}/clash`);
      assert.equal(clash.status, 200, clash.body);
      const doc = readYaml(clash.body);
      for (const k of Object.keys(doc)) assert.ok(MIHOMO_KEYS.includes(k), `no injected key: ${k}`);
      assert.ok(Array.isArray(doc.proxies) && doc.proxies.length > 0, "the user's proxies are there");

      for (const format of ["sing-box", "v2ray-json"]) {
        const res = await get(`/sub/${key}/${format}`);
        assert.equal(res.status, 200, res.body);
        assert.doesNotThrow(() => JSON.parse(res.body), format);
      }
      const links = await get(`/sub/${key}/links`);
      assert.equal(links.status, 200);
      const base64 = await get(`/sub/${key}/v2ray`);
      assert.equal(Buffer.from(base64.body, "base64").toString("utf8"), links.body);
      for (const line of links.body.split("\n")) {
        assert.deepEqual(escapingProblems(line), [], line);
        assert.doesNotThrow(() => decodeLink(line), line);
      }

      const page = await get(`/sub/${key}`, { accept: "text/html", "user-agent": "Mozilla/5.0 Chrome/130" });
      assert.equal(page.status, 200);
      assert.ok(!page.body.includes("<script>alert(1)"), "markup in a name is escaped on the page");
    });
  }
});

describe("encoded-path attacks on the old-URL routes", () => {
  const good = () => token(ACCEPTED[0] as string);
  const legacyForm = () => signMarzbanLegacy(ACCEPTED[0] as string, Math.floor(Date.now() / 1000), secret);
  const targets = (): string[] => [
    "/sub/%2e%2e/%2e%2e/api/users",
    "/sub/%2e%2e%2f%2e%2e%2fapi%2fusers",
    "/sub/..%2f..%2fapi%2fusers/info",
    "/sub/%252e%252e%252fapi%252fusers",
    "/sub/%252e%252e/info",
    "/sub/%00",
    "/sub/%00/info",
    `/sub/${good()}%00/links`,
    `/sub/${good()}%2500/links`,
    `/sub/${good()}/%2e%2e`,
    `/sub/${good()}/clash%00`,
    `/sub/${good()}/%252e%252e%252finfo`,
    `/sub/${encodeURIComponent(good())}%2F..%2Finfo`,
    `/sub/${legacyForm()}%2e%2e`,
    "/sub/%ff%fe/info",
    "/sub/%e2%80/links",
    "/sub/%/info",
    "/sub/%zz",
    "/json/%2e%2e",
    "/json/%2e%2e%2f%2e%2e%2fapi%2fusers",
    "/json/%00",
    "/json/%252e%252e",
    "/json/%ff",
    `/sub/${"a".repeat(1025)}`,
    `/sub/${"a".repeat(8000)}/info`,
    `/sub/${good()}${"A".repeat(4000)}/links`,
    `/json/${"b".repeat(8000)}`,
    // alg "none", and an HS256 header on another user's claims with the first one's signature.
    `/sub/${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(`{"sub":${JSON.stringify(ACCEPTED[0])},"access":"subscription"}`).toString("base64url")}.`,
    `/sub/${good().split(".").slice(0, 1).join(".")}.${Buffer.from('{"sub":"user_000040","access":"subscription"}').toString("base64url")}.${good().split(".")[2]}`,
  ];

  test("each is 404, never a 500, and the app answers the real URL afterwards", async () => {
    for (const target of targets()) {
      const res = await get(target);
      assert.equal(res.status, 404, `${target.slice(0, 120)}: ${res.status} ${res.body.slice(0, 200)}`);
      assert.match(String(res.headers["content-type"]), /application\/problem\+json/, target.slice(0, 120));
    }
    assert.equal((await get(`/sub/${good()}/links`)).status, 200);
  });
});
