// The rules of scheduled backups, without files: names that sort by time, when one is due, which
// old ones go (never a file that is not ours).
import assert from "node:assert/strict";
import { test } from "node:test";
import { backupFileName, backupsToDelete, isBackupDue, isPartialBackup, takenAt } from "./schedule.ts";

const at = (iso: string) => new Date(iso);
const HOUR = 3_600_000;

test("a backup's name carries its time to the millisecond and sorts by it; other names carry none", () => {
  const name = backupFileName(at("2026-05-01T03:00:00.123Z"), "sqlite");
  assert.equal(name, "portcullis-20260501T030000123Z.db");
  assert.equal(
    backupFileName(at("2026-05-01T03:00:00.123Z"), "postgres"),
    "portcullis-20260501T030000123Z.pgdump",
  );
  assert.equal(takenAt(name)?.toISOString(), "2026-05-01T03:00:00.123Z");
  assert.ok(
    backupFileName(at("2026-05-01T10:00:00Z"), "sqlite") >
      backupFileName(at("2026-05-01T09:59:59.999Z"), "sqlite"),
  );
  for (const other of [
    "notes.txt",
    "portcullis.db",
    "portcullis-20261301T000000000Z.db",
    "portcullis-20260501T030000123Z.db.bak",
  ]) {
    assert.equal(takenAt(other), undefined, other);
  }
});

test("a backup is due with none yet, once the newest is an interval old, or when the clock went far back", () => {
  const newest = backupFileName(at("2026-05-01T00:00:00Z"), "sqlite");
  assert.equal(isBackupDue([], at("2026-05-01T00:00:00Z"), 24 * HOUR), true);
  assert.equal(isBackupDue(["notes.txt"], at("2026-05-01T00:00:00Z"), 24 * HOUR), true, "only ours count");
  assert.equal(isBackupDue([newest], at("2026-05-01T23:59:59.999Z"), 24 * HOUR), false);
  assert.equal(isBackupDue([newest], at("2026-05-02T00:00:00Z"), 24 * HOUR), true);
  assert.equal(isBackupDue([newest], at("2026-04-30T12:00:00Z"), 24 * HOUR), false, "a little in the future");
  assert.equal(
    isBackupDue([newest], at("2026-04-29T23:59:59Z"), 24 * HOUR),
    true,
    "more than an interval ahead",
  );
});

test("retention deletes ours beyond the newest `keep`, oldest first, and nothing else", () => {
  const names = [1, 2, 3, 4, 5].map((day) => backupFileName(at(`2026-05-0${day}T00:00:00Z`), "sqlite"));
  const others = ["notes.txt", "portcullis.db", ".portcullis-20260506T000000000Z.db.abcd0123.partial"];
  assert.deepEqual(backupsToDelete([...others, ...[...names].reverse()], 3), names.slice(0, 2));
  assert.deepEqual(backupsToDelete([...others, ...names], 5), []);
  assert.deepEqual(backupsToDelete(others, 1), []);
});

test("the temporary file of an unfinished backup is recognised, and only that", () => {
  assert.equal(isPartialBackup(".portcullis-20260506T000000000Z.db.abcd0123.partial"), true);
  assert.equal(isPartialBackup(".under-load.backup.abcd0123.partial"), false);
  assert.equal(isPartialBackup("portcullis-20260506T000000000Z.db"), false);
});
