// test ring: outer (starts Node processes of its own; scripts/run-tests.ts keeps it out of test:fast)
// Backups of a running service, as operators take them: `portcullis serve` as a process, four
// clients creating users through the API as fast as they are answered, and `portcullis backup` in
// another process meanwhile; then `portcullis restore` into an empty target, on whichever dialect
// DATABASE_URL selects (SQLite: the online backup API; PostgreSQL: pg_dump / pg_restore).
// Under load the restored database is one moment of the live one: every row identical to the live
// row, each client's users a prefix of what it created (no later write without the earlier ones), some
// of the load in and some not. Once the load stops, a second backup restores to identical tables.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import { waitFor } from "../../../test/support/poll.ts";
import {
  type PortcullisProcess,
  type Store,
  sharedStore,
  startPortcullis,
} from "../../../test/support/portcullis-process.ts";
import { freePort } from "../../../test/support/ports.ts";
import { dumpTables, seedUsers, type TableRows } from "../../../test/support/tables.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import { type DatabaseHandle, openDatabase } from "../../db/connection.ts";
import { SecretBox } from "../../lib/secret-box.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const stack = new CleanupStack();
after(() => stack.run());

const SEEDED_USERS = Number(process.env.PORTCULLIS_BACKUP_TEST_USERS ?? 20_000);
const WRITERS = 4;
const TOKEN = `leakcheck-${randomBytes(6).toString("hex")}`;
// A request may touch its token's last_used_at (at most once a minute): not a consistency matter.
/**
 * Columns a row changes after it is written: a token's last use, and an audit entry's outcome (it is
 * written `pending` before its call runs and completed after).
 */
const VOLATILE: Record<string, string[]> = {
  admin_tokens: ["last_used_at"],
  audit_log: ["outcome", "status", "finished_at", "targets", "fields"],
};

type Cli = { status: number; stdout: string; stderr: string };

function portcullis(args: string[], env: Record<string, string>): Promise<Cli> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", join(ROOT, "src/main.ts"), ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? "", LOG_LEVEL: "warn", ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ status: error === null ? 0 : Number(error.code ?? -1), stdout, stderr });
      },
    );
  });
}

/** Clients creating users one after another until stopped; what each got back, in order. */
function startLoad(p: PortcullisProcess) {
  let isStopped = false;
  /** The first write that was not answered 201: the load stops there, and stop() reports it. */
  let failure: string | undefined;
  const created: string[][] = Array.from({ length: WRITERS }, () => []);
  const writers = created.map(async (names, w) => {
    for (let i = 0; !isStopped && failure === undefined; i++) {
      try {
        const res = await p.api("POST", "/api/users", { name: `load ${w}-${i}` });
        if (res.status !== 201) {
          failure ??= `writer ${w}, user ${i}: ${res.status} ${JSON.stringify(await res.json())}`;
          return;
        }
      } catch (error) {
        failure ??= `writer ${w}, user ${i}: ${String(error)}`;
        return;
      }
      names.push(`load ${w}-${i}`);
    }
  });
  return {
    created,
    failure: () => failure,
    total: () => created.reduce((sum, names) => sum + names.length, 0),
    stop: async () => {
      isStopped = true;
      await Promise.all(writers);
      assert.equal(failure, undefined, "every write of the load is answered 201");
    },
  };
}

/** An empty target of the same dialect: a new DATA_DIR, or a new scratch database. */
async function emptyTarget(store: Store): Promise<Record<string, string>> {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-restore-"));
  stack.add(() => rmSync(dataDir, { recursive: true, force: true }));
  if (store.env.DATABASE_URL === undefined) return { DATA_DIR: dataDir };
  const other = await sharedStore(stack.add);
  return {
    DATA_DIR: dataDir,
    DATABASE_URL: other.env.DATABASE_URL as string,
    PORTCULLIS_SECRET_KEY: store.env.PORTCULLIS_SECRET_KEY as string,
  };
}

async function restoreInto(
  store: Store,
  file: string,
): Promise<{ env: Record<string, string>; database: DatabaseHandle; out: Cli }> {
  const env = await emptyTarget(store);
  const out = await portcullis(["restore", file], env);
  assert.equal(out.status, 0, out.stderr);
  const database = await openDatabase({
    dataDir: env.DATA_DIR as string,
    databaseUrl: env.DATABASE_URL,
    poolSize: 2,
  });
  stack.add(() => database.close());
  return { env, database, out };
}

function withoutVolatile(table: string, rows: readonly string[]): string[] {
  const columns = VOLATILE[table];
  if (columns === undefined) return [...rows];
  return rows
    .map((row) => {
      const parsed = JSON.parse(row) as Record<string, unknown>;
      for (const column of columns) delete parsed[column];
      return JSON.stringify(parsed);
    })
    .sort();
}

/** SQLite's FTS5 tables (their shadow tables are named after them). */
async function ftsTables(database: DatabaseHandle): Promise<string[]> {
  if (database.dialect !== "sqlite") return [];
  const rows = await sql<{ name: string }>`SELECT name FROM sqlite_master
    WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'`.execute(database.db);
  return rows.rows.map((row) => row.name);
}

async function assertIntegrity(database: DatabaseHandle): Promise<void> {
  if (database.dialect !== "sqlite") return; // pg_restore --single-transaction --exit-on-error: all or nothing
  const check = await sql<{ integrity_check: string }>`PRAGMA integrity_check`.execute(database.db);
  assert.deepEqual(check.rows, [{ integrity_check: "ok" }]);
  const fts = await ftsTables(database);
  assert.ok(fts.length > 0, "the user search index is there");
  // FTS5 raises an error when an index does not match the rows it indexes.
  for (const name of fts)
    await sql`INSERT INTO ${sql.table(name)} (${sql.ref(name)}) VALUES ('integrity-check')`.execute(
      database.db,
    );
}

test("a backup taken under write load restores to one moment of the live database; at rest, to identical tables", async (t) => {
  const store = await sharedStore(stack.add);
  const live = await store.open();
  stack.add(() => live.close());
  // A long reconcile interval: the one server below is never polled, so the load is the only writer.
  const p = await startPortcullis(stack.add, store, {
    PORTCULLIS_RECONCILE_INTERVAL_MS: "600000",
    PORTCULLIS_LEASE_TTL_MS: "1800000",
  });
  const server = await p.api("POST", "/api/servers", {
    name: "sealed",
    hostname: "127.0.0.1",
    grpc_port: await freePort(),
    api_credentials: JSON.stringify({ token: TOKEN }),
  });
  assert.equal(server.status, 201);
  const certificate = await p.api("POST", "/api/certificates", {
    name: "c",
    cert_type: "self_signed",
    domain: "backup.test",
  });
  assert.equal(certificate.status, 201);
  await seedUsers(live, SEEDED_USERS);

  const load = startLoad(p);
  // A failed write ends the wait at once; load.stop() below reports it.
  const going = (n: number) => () => load.failure() !== undefined || load.total() >= n;
  await waitFor(going(40), { timeoutMs: 30_000, what: "the load to get going" });
  const dir = mkdtempSync(join(tmpdir(), "portcullis-backups-"));
  stack.add(() => rmSync(dir, { recursive: true, force: true }));
  const underLoad = join(dir, "under-load.backup");
  const startedAt = load.total();
  const backup = await portcullis(["backup", underLoad], store.env);
  const duringBackup = load.total() - startedAt;
  await waitFor(going(startedAt + duringBackup + 20), { what: "writes after the backup" });
  await load.stop();
  assert.equal(backup.status, 0, backup.stderr);
  t.diagnostic(`${live.dialect}: ${backup.stdout.trim()}; ${duringBackup} users created while it ran`);

  const restored = await restoreInto(store, underLoad);
  await assertIntegrity(restored.database);
  const shadowOf = await ftsTables(restored.database);
  const liveRows = await dumpTables(live);
  const restoredRows = await dumpTables(restored.database);
  assert.deepEqual([...restoredRows.keys()], [...liveRows.keys()], "the same tables");
  for (const [table, rows] of restoredRows) {
    // FTS5 internals change shape with every insert: checked by integrity-check above instead.
    if (shadowOf.some((fts) => table.startsWith(`${fts}_`))) continue;
    // Counters the load moves: checked against the tables they count, below.
    if (table === "row_counts") continue;
    const liveSet = new Set(withoutVolatile(table, liveRows.get(table) ?? []));
    const missing = withoutVolatile(table, rows).filter((row) => !liveSet.has(row));
    assert.deepEqual(missing, [], `${table}: every restored row is identical to a live row`);
  }
  const names = new Set(
    (await restored.database.db.selectFrom("users").select("name").execute()).map((row) => row.name),
  );
  let loadInBackup = 0;
  for (const written of load.created) {
    const inBackup = written.filter((name) => names.has(name)).length;
    assert.deepEqual(
      written.slice(0, inBackup).filter((name) => !names.has(name)),
      [],
      "a prefix of each client's writes",
    );
    loadInBackup += inBackup;
  }
  assert.equal(names.size, SEEDED_USERS + loadInBackup, "every seeded user, and nothing but whole prefixes");
  // A trigger moves the counter in each insert's transaction: equal counts mean whole transactions.
  for (const { table_name, n } of await restored.database.db.selectFrom("row_counts").selectAll().execute()) {
    const counted = await sql<{
      n: number | string;
    }>`SELECT count(*) AS n FROM ${sql.table(table_name)}`.execute(restored.database.db);
    assert.equal(Number(n), Number(counted.rows[0]?.n), `row_counts.${table_name}`);
  }
  assert.ok(
    loadInBackup >= 40 && loadInBackup < load.total(),
    `${loadInBackup} of ${load.total()} load writes: taken mid-load`,
  );
  await assertKeyOpens(restored, live.dialect === "sqlite");

  // At rest: another backup, and every table (FTS5 internals included) restores identical.
  const atRest = join(dir, "at-rest.backup");
  assert.equal((await portcullis(["backup", atRest], store.env)).status, 0);
  const again = await restoreInto(store, atRest);
  const rest = await dumpTables(again.database);
  assertIdentical(rest, await dumpTables(live));

  // And the restored target serves: the admin signs in and sees every user.
  const served = await startPortcullis(stack.add, { env: again.env, open: async () => again.database });
  const users = (await (await served.api("GET", "/api/users?per_page=1")).json()) as { total: number };
  assert.equal(users.total, SEEDED_USERS + load.total());
});

function assertIdentical(actual: TableRows, expected: TableRows): void {
  assert.deepEqual([...actual.keys()], [...expected.keys()]);
  for (const [table, rows] of expected) {
    const got = actual.get(table) ?? [];
    assert.equal(got.length, rows.length, `${table}: row count`);
    assert.deepEqual(got, rows, `${table}: identical rows`);
  }
}

/** The key `serve` will use on the restored target opens the sealed api_credentials. */
async function assertKeyOpens(
  restored: { env: Record<string, string>; out: Cli; database: DatabaseHandle },
  isFromBackup: boolean,
): Promise<void> {
  assert.match(restored.out.stdout, /it opens the sealed values/);
  const hex = isFromBackup
    ? readFileSync(join(restored.env.DATA_DIR as string, "secret.key"), "utf8")
    : (restored.env.PORTCULLIS_SECRET_KEY as string);
  const row = await restored.database.db
    .selectFrom("servers")
    .select("api_credentials_sealed")
    .where("name", "=", "sealed")
    .executeTakeFirstOrThrow();
  const opened = new SecretBox(Buffer.from(hex, "hex")).open(row.api_credentials_sealed ?? "");
  assert.ok(opened.includes(TOKEN), "the restored key opens the restored credentials");
}
