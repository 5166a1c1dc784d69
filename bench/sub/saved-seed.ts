// `bench:sub --data DIR`: a seeded SQLite database kept in DIR for later runs, so that a run at a
// million users does not spend its first 8–12 minutes seeding again. DIR holds a pristine copy of
// the database (runs measure a copy of it: the service writes to the one it serves) and what the
// driver needs of the seeding (the user ids in seeding order, the inbounds, the names and credentials
// of the users whose answers are checked). A saved seed is used only when it was made for the same
// number of users, the same migrations and the same seeding code (bench/sub/seed.ts), and holds every
// user the run checks; otherwise the run seeds again and replaces it.
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { sqliteFile } from "../../src/db/connection.ts";
import { migrations } from "../../src/db/migrations/index.ts";
import type { Seeded, SeededUser } from "./seed.ts";

const DESCRIPTION_FILE = "seed.json";

/**
 * The database's files in a folder (as db/connection.ts names them): a WAL left behind goes along.
 * Each file is copied under a temporary name and renamed into place, so a run restoring from the
 * folder while another saves into it copies an old file or a new one, never a half-written one (a
 * description and a database of two different seeds then fail the answers' byte-for-byte check).
 */
function copyDatabase(from: string, to: string): void {
  for (const suffix of ["", "-wal"]) {
    const file = `${sqliteFile(from)}${suffix}`;
    const target = `${sqliteFile(to)}${suffix}`;
    if (!existsSync(file)) continue;
    copyFileSync(file, `${target}.tmp`);
    renameSync(`${target}.tmp`, target);
  }
}

type Description = {
  /** What the seed was made by: users, migrations, the seeding code. */
  key: string;
  databaseVersion: string;
  seconds: number;
  userIds: string[];
  inbounds: Seeded["inbounds"];
  kept: [string, SeededUser][];
};

/** Identifies what a seed depends on: the user count, the migrations and bench/sub/seed.ts. */
export function seedKey(users: number, seedSource: string): string {
  const hash = createHash("sha256");
  hash.update(`${users}\n${Object.keys(migrations).join("\n")}\n`);
  hash.update(seedSource);
  return hash.digest("hex");
}

export type SavedSeed = { seeded: Seeded; databaseVersion: string };

/**
 * Copies the saved database into `dataDir` and returns what the seeding gave, or undefined (nothing
 * copied) when DIR has no seed made with `key` or it lacks one of the `needed` users (by index).
 */
export function restoreSeed(
  dir: string,
  key: string,
  needed: Iterable<number>,
  dataDir: string,
): SavedSeed | undefined {
  const descriptionFile = join(dir, DESCRIPTION_FILE);
  if (!existsSync(descriptionFile) || !existsSync(sqliteFile(dir))) return undefined;
  const description = JSON.parse(readFileSync(descriptionFile, "utf8")) as Description;
  if (description.key !== key) return undefined;
  const kept = new Map(description.kept);
  for (const index of needed) {
    const id = description.userIds[index];
    if (id === undefined || !kept.has(id)) return undefined;
  }
  copyDatabase(dir, dataDir);
  return {
    seeded: {
      userIds: description.userIds,
      inbounds: description.inbounds,
      kept,
      seconds: description.seconds,
    },
    databaseVersion: description.databaseVersion,
  };
}

/**
 * Saves the database just seeded in `dataDir` (its connection closed, so the file is whole) and the
 * seeding's result into DIR, replacing what was there. The description is written last, under a
 * temporary name first, so that an interrupted save leaves no seed that looks whole.
 */
export function saveSeed(dir: string, key: string, dataDir: string, saved: SavedSeed): void {
  mkdirSync(dir, { recursive: true });
  rmSync(join(dir, DESCRIPTION_FILE), { force: true });
  rmSync(`${sqliteFile(dir)}-wal`, { force: true });
  copyDatabase(dataDir, dir);
  const description: Description = {
    key,
    databaseVersion: saved.databaseVersion,
    seconds: saved.seeded.seconds,
    userIds: saved.seeded.userIds,
    inbounds: saved.seeded.inbounds,
    kept: [...saved.seeded.kept],
  };
  const temporary = join(dir, `${DESCRIPTION_FILE}.tmp`);
  writeFileSync(temporary, JSON.stringify(description));
  renameSync(temporary, join(dir, DESCRIPTION_FILE));
}
