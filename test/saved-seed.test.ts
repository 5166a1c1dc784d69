// bench:sub --data: a kept seed is used only for the run it was made for, and a restored copy is the
// database that was saved (bench/sub/saved-seed.ts). The benchmark's own smoke run checks every
// answer of a restored database byte for byte; this checks the choice of when to restore.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { restoreSeed, type SavedSeed, saveSeed, seedKey } from "../bench/sub/saved-seed.ts";
import { sqliteFile } from "../src/db/connection.ts";

const SAVED: SavedSeed = {
  seeded: {
    userIds: ["u0", "u1", "u2"],
    inbounds: [{ id: "i0", serverId: "s0", protocol: "vless", linkParams: {} as never }],
    kept: new Map([
      ["u0", { name: "Ann", credentials: ["c0"] }],
      ["u2", { name: "Bo", credentials: ["c2"] }],
    ]),
    seconds: 12.5,
  },
  databaseVersion: "SQLite 3.53.2",
};

function folders(t: { after(fn: () => void): void }) {
  const root = mkdtempSync(join(tmpdir(), "portcullis-saved-seed-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const seeded = join(root, "seeded");
  const kept = join(root, "kept");
  const run = join(root, "run");
  mkdirSync(seeded);
  mkdirSync(run);
  return { seeded, kept, run };
}

test("a saved seed comes back whole for the same key: the database's bytes and what the seeding gave", (t) => {
  const { seeded, kept, run } = folders(t);
  writeFileSync(sqliteFile(seeded), "database bytes");
  writeFileSync(`${sqliteFile(seeded)}-wal`, "wal bytes");
  const key = seedKey(3, "seed code");
  saveSeed(kept, key, seeded, SAVED);

  const restored = restoreSeed(kept, key, [0, 2], run);
  assert.ok(restored !== undefined);
  assert.deepEqual(restored, SAVED);
  assert.equal(readFileSync(sqliteFile(run), "utf8"), "database bytes");
  assert.equal(readFileSync(`${sqliteFile(run)}-wal`, "utf8"), "wal bytes");

  // A later seed without a WAL replaces the folder: the old seed's WAL must not come back with it.
  const again = join(run, "..", "again");
  mkdirSync(again);
  rmSync(`${sqliteFile(seeded)}-wal`);
  writeFileSync(sqliteFile(seeded), "new database bytes");
  saveSeed(kept, key, seeded, SAVED);
  assert.ok(restoreSeed(kept, key, [0], again) !== undefined);
  assert.equal(readFileSync(sqliteFile(again), "utf8"), "new database bytes");
  assert.equal(existsSync(`${sqliteFile(again)}-wal`), false);
});

test("a saved seed is refused, and nothing copied, for another key or a user it did not keep", (t) => {
  const { seeded, kept, run } = folders(t);
  writeFileSync(sqliteFile(seeded), "database bytes");
  const key = seedKey(3, "seed code");
  saveSeed(kept, key, seeded, SAVED);

  assert.equal(restoreSeed(kept, seedKey(4, "seed code"), [0], run), undefined, "another user count");
  assert.equal(restoreSeed(kept, seedKey(3, "other seed code"), [0], run), undefined, "other seeding code");
  assert.equal(restoreSeed(kept, key, [1], run), undefined, "user 1's answers were not kept");
  assert.equal(restoreSeed(kept, key, [7], run), undefined, "no user 7");
  assert.equal(existsSync(sqliteFile(run)), false);
});

test("a folder without a whole seed (no description, or no database) restores nothing", (t) => {
  const { seeded, kept, run } = folders(t);
  const key = seedKey(3, "seed code");
  assert.equal(restoreSeed(kept, key, [], run), undefined, "no folder");
  writeFileSync(sqliteFile(seeded), "database bytes");
  saveSeed(kept, key, seeded, SAVED);
  rmSync(sqliteFile(kept));
  assert.equal(restoreSeed(kept, key, [], run), undefined, "description without database");
  saveSeed(kept, key, seeded, SAVED);
  rmSync(join(kept, "seed.json"));
  assert.equal(restoreSeed(kept, key, [], run), undefined, "database without description");
});

test("the key changes with the user count and the seeding code", () => {
  assert.equal(seedKey(3, "a"), seedKey(3, "a"));
  assert.notEqual(seedKey(3, "a"), seedKey(30, "a"));
  assert.notEqual(seedKey(3, "a"), seedKey(3, "b"));
});
