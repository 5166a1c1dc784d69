// Backups in-process. The scheduled job (on whichever dialect DATABASE_URL selects) writes a backup
// when one is due, not twice, and keeps the newest `keep`. Restore (SQLite) refuses, before writing
// anything, what it cannot restore well: a file that is not a backup, a damaged one, one from a newer
// version, a target that is not empty, and a key that does not fit; and takes a backup made without
// its key once the right key is given.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { registerServer } from "../../../test/support/provisioning.ts";
import { seedUsers } from "../../../test/support/tables.ts";
import { loadSqlite } from "../../db/connection.ts";
import { scheduledBackupJob } from "../../jobs/backup.ts";
import { keyFingerprint } from "./backup-meta.ts";
import { restoreBackup } from "./restore.ts";

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-backup-"));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("scheduled backups", () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test("a backup when due, none twice, the newest `keep` kept, other files left alone", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "notes.txt"), "mine");
    let now = new Date("2026-05-01T00:00:00Z");
    const job = scheduledBackupJob(
      {
        dir,
        intervalMinutes: 60,
        keep: 2,
        isKeyIncluded: true,
        dialect: t.deps.database.dialect,
        now: () => now,
      },
      t.deps.services.backups,
      t.deps.logger,
    );
    const run = () => job.run({ signal: new AbortController().signal });
    const ours = () =>
      readdirSync(dir)
        .filter((name) => name.startsWith("portcullis-"))
        .sort();
    const ext = t.deps.database.dialect === "sqlite" ? "db" : "pgdump";

    await run();
    assert.deepEqual(ours(), [`portcullis-20260501T000000000Z.${ext}`]);
    now = new Date("2026-05-01T00:59:59Z");
    await run();
    assert.equal(ours().length, 1, "not due yet");
    for (const hour of ["01", "02", "03"]) {
      now = new Date(`2026-05-01T${hour}:00:00Z`);
      await run();
    }
    assert.deepEqual(ours(), [
      `portcullis-20260501T020000000Z.${ext}`,
      `portcullis-20260501T030000000Z.${ext}`,
    ]);
    for (const name of ours())
      assert.equal(statSync(join(dir, name)).mode & 0o777, 0o600, `${name} is private`);
    assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), "mine");
    assert.equal(readdirSync(dir).length, 3, "no temporary files left");
  });
});

describe("a scheduled SQLite backup steps through the service's own connection", () => {
  test("writes made between its steps are in the copy, which restores whole and consistent", async () => {
    const t = await createTestApp({ DATABASE_URL: "" });
    try {
      await seedUsers(t.deps.database, 15_000);
      const { sqlite } = t.deps.database;
      assert.ok(sqlite !== undefined);
      const pages = Number(sqlite.pragma("page_count", { simple: true }));
      assert.ok(pages > 4 * 256, `${pages} pages: several steps of 256`);
      let isDone = false;
      const written: string[] = [];
      const writer = (async () => {
        for (let i = 0; !isDone; i++) {
          await t.deps.services.users.create({ name: `during ${i}` });
          written.push(`during ${i}`);
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      const file = join(tempDir(), "scheduled.db");
      await t.deps.services.backups.backup(file, { withKey: true });
      const writtenBeforeEnd = written.length;
      isDone = true;
      await writer;
      assert.ok(writtenBeforeEnd >= 2, `${writtenBeforeEnd} writes while the backup stepped`);
      const into = { dataDir: join(tempDir(), "data"), databaseUrl: undefined, secretKey: undefined };
      await restoreBackup(file, into);
      const restored = new (loadSqlite())(join(into.dataDir, "portcullis.db"), { readonly: true });
      try {
        const names = new Set(
          (restored.prepare("SELECT name FROM users").all() as { name: string }[]).map((row) => row.name),
        );
        const during = written.filter((name) => names.has(name)).length;
        assert.ok(
          during >= writtenBeforeEnd,
          `${during} of the ${writtenBeforeEnd} writes made before it ended`,
        );
        assert.deepEqual(
          written.slice(0, during).filter((name) => !names.has(name)),
          [],
          "a prefix",
        );
        assert.equal(names.size, 15_000 + during);
        assert.equal(
          (restored.prepare("SELECT n FROM row_counts WHERE table_name = 'users'").get() as { n: number }).n,
          names.size,
        );
        assert.equal(restored.pragma("integrity_check", { simple: true }), "ok");
      } finally {
        restored.close();
      }
    } finally {
      await t.close();
    }
  });
});

describe("restore refuses what it cannot restore well (SQLite)", () => {
  let t: TestApp;
  let withKey: string;
  let withoutKey: string;
  const secretKey = randomBytes(32);
  before(async () => {
    t = await createTestApp({ DATABASE_URL: "", PORTCULLIS_SECRET_KEY: secretKey.toString("hex") });
    await registerServer(t, 9, { api_credentials: JSON.stringify({ token: "leakcheck-restore" }) });
    const dir = tempDir();
    withKey = join(dir, "with-key.db");
    withoutKey = join(dir, "without-key.db");
    await t.deps.services.backups.backup(withKey, { withKey: true });
    await t.deps.services.backups.backup(withoutKey, { withKey: false });
  });
  after(() => t.close());

  const target = (secret?: Buffer) => ({
    dataDir: join(tempDir(), "data"),
    databaseUrl: undefined,
    secretKey: secret,
  });

  test("a backup with the key says loudly what the key opens, counted; one without says which key to keep", async () => {
    const dir = tempDir();
    const loud = await t.deps.services.backups.backup(join(dir, "loud.db"), { withKey: true });
    assert.deepEqual(loud.sealed, { "servers.api_credentials_sealed": 1 });
    assert.match(loud.keyNote, /^WARNING: THE SECRET KEY \(fingerprint [0-9a-f]{16}\) IS IN THIS BACKUP/);
    assert.match(loud.keyNote, /can open every sealed value in it: 1 × server API credentials/);
    assert.match(loud.keyNote, /--without-key/);
    assert.doesNotMatch(loud.keyNote, new RegExp(secretKey.toString("hex")));
    const quiet = await t.deps.services.backups.backup(join(dir, "quiet.db"), { withKey: false });
    assert.match(quiet.keyNote, /the secret key is NOT in the backup/);
  });

  test("a backup with its key restores alone: the key lands in DATA_DIR/secret.key and opens the sealed values", async () => {
    const into = target();
    const result = await restoreBackup(withKey, into);
    assert.equal(result.keySource, "backup, written to DATA_DIR/secret.key");
    assert.equal(result.isKeyVerified, true);
    assert.equal(readFileSync(join(into.dataDir, "secret.key"), "utf8"), secretKey.toString("hex"));
  });

  test("a backup without its key needs it: refused without, refused with another, restored with it", async () => {
    const fingerprint = keyFingerprint(secretKey);
    const into = target();
    await assert.rejects(
      restoreBackup(withoutKey, into),
      new RegExp(`without its secret key \\(fingerprint ${fingerprint}\\)`),
    );
    assert.equal(existsSync(join(into.dataDir, "portcullis.db")), false, "nothing written");
    const wrongKeyFile = join(tempDir(), "wrong.key");
    writeFileSync(wrongKeyFile, randomBytes(32).toString("hex"));
    await assert.rejects(restoreBackup(withoutKey, into, { keyFile: wrongKeyFile }), /is not the backup's/);
    assert.equal(existsSync(join(into.dataDir, "portcullis.db")), false, "nothing written");
    const keyFile = join(tempDir(), "right.key");
    writeFileSync(keyFile, `${secretKey.toString("hex")}\n`);
    const result = await restoreBackup(withoutKey, into, { keyFile });
    assert.equal(result.isKeyVerified, true);
    assert.equal(result.keySource, "DATA_DIR/secret.key");
  });

  test("a configured key that differs from the backup's, or from --key-file, is refused", async () => {
    await assert.rejects(restoreBackup(withKey, target(randomBytes(32))), /differs from the one configured/);
    const into = target();
    mkdirSync(into.dataDir, { recursive: true });
    writeFileSync(join(into.dataDir, "secret.key"), randomBytes(32).toString("hex"));
    const keyFile = join(tempDir(), "right.key");
    writeFileSync(keyFile, secretKey.toString("hex"));
    await assert.rejects(restoreBackup(withoutKey, into, { keyFile }), /--key-file differs from/);
    assert.equal(existsSync(join(into.dataDir, "portcullis.db")), false, "nothing written");
  });

  test("a target that already holds a database is refused and left as it was", async () => {
    const into = target();
    await restoreBackup(withKey, into);
    const before = readFileSync(join(into.dataDir, "portcullis.db"));
    await assert.rejects(
      restoreBackup(withKey, into),
      /already holds a database; restore into an empty DATA_DIR/,
    );
    assert.ok(readFileSync(join(into.dataDir, "portcullis.db")).equals(before));
  });

  test("not a backup, a damaged one, one from a newer version: each refused with a reason", async () => {
    const dir = tempDir();
    const text = join(dir, "text.db");
    writeFileSync(text, "hello, I am not a database\n".repeat(200));
    await assert.rejects(
      restoreBackup(text, target()),
      /text.db cannot be read as a SQLite backup: file is not a database/,
    );

    const SQLite = loadSqlite();
    const plain = join(dir, "plain.db");
    new SQLite(plain).exec("CREATE TABLE x (y)").close();
    await assert.rejects(restoreBackup(plain, target()), /is not a Portcullis backup/);

    const newer = join(dir, "newer.db");
    writeFileSync(newer, readFileSync(withKey));
    const db = new SQLite(newer);
    db.prepare("INSERT INTO kysely_migration (name, timestamp) VALUES (?, ?)").run(
      "9999_future",
      new Date().toISOString(),
    );
    db.prepare("UPDATE portcullis_backup SET value = '9.9.9' WHERE name = 'portcullis_version'").run();
    db.close();
    await assert.rejects(
      restoreBackup(newer, target()),
      /made by Portcullis 9\.9\.9, newer than this one.*9999_future/,
    );

    const damaged = join(dir, "damaged.db");
    const bytes = readFileSync(withKey);
    bytes.fill(0xa5, 4096 * 3, 4096 * 6); // three whole pages in the middle
    writeFileSync(damaged, bytes);
    await assert.rejects(restoreBackup(damaged, target()), /damaged.db is damaged \(integrity_check: /);

    await assert.rejects(restoreBackup(join(dir, "absent.db"), target()), /does not exist/);
  });
});

describe("restore tells the two kinds of backup apart (PostgreSQL runs)", {
  skip: process.env.DATABASE_URL === undefined,
}, () => {
  let t: TestApp;
  let archive: string;
  before(async () => {
    t = await createTestApp();
    archive = join(tempDir(), "dump.pgdump");
    await t.deps.services.backups.backup(archive, { withKey: true });
  });
  after(() => t.close());

  test("a pg_dump archive into a database that is not empty is refused; into SQLite it is named", async () => {
    const databaseUrl = process.env.DATABASE_URL as string;
    await assert.rejects(
      restoreBackup(archive, { dataDir: tempDir(), databaseUrl, secretKey: undefined }),
      /is not empty; restore into an empty database/,
    );
    await assert.rejects(
      restoreBackup(archive, { dataDir: tempDir(), databaseUrl: undefined, secretKey: undefined }),
      /is a pg_dump archive: restore it with DATABASE_URL set/,
    );
  });

  test("a SQLite backup into PostgreSQL is named as such", async () => {
    const sqlite = await createTestApp({ DATABASE_URL: "" });
    const file = join(tempDir(), "sqlite.db");
    await sqlite.deps.services.backups.backup(file, { withKey: true });
    await sqlite.close();
    await assert.rejects(
      restoreBackup(file, {
        dataDir: tempDir(),
        databaseUrl: process.env.DATABASE_URL,
        secretKey: undefined,
      }),
      /is not a pg_dump custom-format archive \(a SQLite backup restores with DATABASE_URL unset\)/,
    );
  });
});
