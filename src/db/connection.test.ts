// The PostgreSQL pool survives the server ending an idle connection (a restart, an administrator's
// pg_terminate_backend): no uncaught 'error' event, and the next query gets a new connection.
// Runs in the PostgreSQL pass of the suite (DATABASE_URL); the SQLite pass skips it.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { sql } from "kysely";
import { waitFor } from "../../test/support/poll.ts";
import { openDatabase } from "./connection.ts";

test("an idle pooled connection ended by the server is dropped quietly; the next query reconnects", {
  skip: process.env.DATABASE_URL === undefined ? "needs PostgreSQL (DATABASE_URL)" : false,
}, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-pool-"));
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  process.on("uncaughtException", onUncaught);
  const handle = await openDatabase({ dataDir, databaseUrl: process.env.DATABASE_URL, poolSize: 1 });
  const admin = await openDatabase({ dataDir, databaseUrl: process.env.DATABASE_URL, poolSize: 1 });
  try {
    const pid = async () =>
      (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(handle.db)).rows[0]?.pid;
    const before = await pid();
    assert.ok(typeof before === "number");
    // The connection is idle in the pool now; end it from another session.
    const ended = await sql<{ ok: boolean }>`SELECT pg_terminate_backend(${before}) AS ok`.execute(admin.db);
    assert.equal(ended.rows[0]?.ok, true);
    await waitFor(
      async () =>
        (
          await sql<{
            n: number;
          }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${before}`.execute(admin.db)
        ).rows[0]?.n === 0,
      { timeoutMs: 5000, what: "the backend to end" },
    );
    const after = await waitFor(async () => pid().catch(() => undefined), {
      timeoutMs: 5000,
      what: "a query on a new connection",
    });
    assert.notEqual(after, before, "a new connection");
    assert.deepEqual(uncaught, [], "no uncaught 'error' event from the pool");
  } finally {
    process.off("uncaughtException", onUncaught);
    await handle.close();
    await admin.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
