// SQLite's WAL is copied into the database file by the checkpoint worker, never inside a commit of
// the serving connection (db/checkpointer.ts); a worker that fails hands checkpoints back to SQLite.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import pino from "pino";
import { waitFor } from "../../test/support/poll.ts";
import { loadConfig } from "../config/config.ts";
import { createDeps } from "../deps.ts";
import { startCheckpointer } from "./checkpointer.ts";
import { loadSqlite, openDatabase, sqliteFile } from "./connection.ts";

const MIB = 1024 * 1024;

/** 8 MiB of rows through the serving connection, in small commits (each far below 1,000 pages). */
function write8Mib(sqlite: NonNullable<Awaited<ReturnType<typeof openDatabase>>["sqlite"]>) {
  sqlite.exec("CREATE TABLE filler (id INTEGER PRIMARY KEY, data BLOB)");
  const insert = sqlite.prepare("INSERT INTO filler (data) VALUES (?)");
  for (let i = 0; i < 8 * 16; i++) sqlite.transaction(() => insert.run(Buffer.alloc(64 * 1024, i)))();
}

/**
 * A fresh SQLite database with the worker at `checkpointIntervalMs` (0: none) and 8 MiB written through
 * the serving connection; `check` gets the database file's size before the writes.
 */
async function afterWriting(
  checkpointIntervalMs: number,
  check: (file: string, before: number) => Promise<unknown>,
) {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-checkpoint-"));
  const handle = await openDatabase({ dataDir, databaseUrl: undefined, checkpointIntervalMs });
  try {
    const sqlite = handle.sqlite;
    assert.ok(sqlite !== undefined);
    if (checkpointIntervalMs === 0) sqlite.pragma("wal_autocheckpoint = 0");
    assert.equal(sqlite.pragma("wal_autocheckpoint", { simple: true }), 0);
    const file = sqliteFile(dataDir);
    const before = statSync(file).size;
    write8Mib(sqlite);
    await check(file, before);
  } finally {
    await handle.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

test("the serving connection never checkpoints; the worker copies the WAL into the database file", async () => {
  // Only a checkpoint writes the database file; the serving connection does none.
  await afterWriting(50, (file, before) =>
    waitFor(() => statSync(file).size >= before + 8 * MIB, {
      timeoutMs: 10_000,
      what: "the worker's checkpoints to fill the database file",
    }),
  );
});

test("without the worker the database file stays as it was (what the test above relies on)", async () => {
  await afterWriting(0, async (file, before) => {
    assert.ok(statSync(file).size < before + MIB, `${statSync(file).size} bytes`);
  });
});

test("a worker that cannot start gives checkpoints back to the serving connection, and says so", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-checkpoint-"));
  const file = sqliteFile(dataDir);
  const SQLite = loadSqlite();
  const sqlite = new SQLite(file);
  sqlite.pragma("journal_mode = WAL");
  try {
    const failures: Error[] = [];
    const checkpointer = startCheckpointer(sqlite, {
      ...{ file, driver: join(dataDir, "no-such-driver.js"), intervalMs: 50 },
      onFailure: (error) => failures.push(error),
    });
    assert.equal(sqlite.pragma("wal_autocheckpoint", { simple: true }), 0);
    await waitFor(() => failures.length > 0, { timeoutMs: 10_000, what: "the failure to be told" });
    assert.match(failures[0]?.message ?? "", /no-such-driver/);
    assert.equal(sqlite.pragma("wal_autocheckpoint", { simple: true }), 1000);
    await checkpointer.stop();
    assert.equal(failures.length, 1, "told once");
  } finally {
    sqlite.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test("`serve` asks for the worker (backgroundCheckpoints); other users of the database do not start one", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-checkpoint-"));
  const config = loadConfig({ DATA_DIR: dataDir, PORTCULLIS_SECRET_KEY: "00".repeat(32) });
  const autocheckpoint = async (backgroundCheckpoints: boolean) => {
    const deps = await createDeps(config, { logger: pino({ level: "silent" }), backgroundCheckpoints });
    try {
      return deps.database.sqlite?.pragma("wal_autocheckpoint", { simple: true });
    } finally {
      await deps.close();
    }
  };
  try {
    assert.equal(await autocheckpoint(true), 0, "the worker checkpoints, the serving connection never");
    assert.equal(await autocheckpoint(false), 1000, "SQLite's own default");
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
