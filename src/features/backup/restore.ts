// `portcullis restore`: a backup into an empty data directory (SQLite) or an empty database
// (PostgreSQL), then the migrations of this version, then proof that the secret key opens the sealed
// values. Everything that can be checked before writing is checked first: the file is ours and
// undamaged, no newer version made it, the target is empty, and the key fits.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type DatabaseHandle,
  describeDatabase,
  migrateToLatest,
  openDatabase,
  sqliteFile,
} from "../../db/connection.ts";
import { migrations } from "../../db/migrations/index.ts";
import { SecretBox } from "../../lib/secret-box.ts";
import { BackupRepository } from "./backup.repository.ts";
import { BACKUP_FORMAT, existingSecretKey, keyFingerprint, parseKeyFile } from "./backup-meta.ts";
import { isPgDumpArchive, pgRestore } from "./pg-dump.ts";
import { isSqliteTargetEmpty, readSqliteBackup, restoreSqlite } from "./sqlite-backup.ts";

export type RestoreTarget = {
  dataDir: string;
  databaseUrl: string | undefined;
  secretKey: Buffer | undefined;
};

export type RestoreResult = {
  database: string;
  /** When and by which version the backup was taken (SQLite backups say so). */
  takenAt?: string;
  takenBy?: string;
  /** Where the key now is for `serve`. */
  keySource:
    | "backup, written to DATA_DIR/secret.key"
    | "PORTCULLIS_SECRET_KEY"
    | "DATA_DIR/secret.key"
    | "none";
  /** A sealed value was opened with it (false: the database holds none). */
  isKeyVerified: boolean;
};

/** A problem with the backup, the target or the key that the operator can fix; one line. */
export class RestoreError extends Error {}

export async function restoreBackup(
  file: string,
  target: RestoreTarget,
  options: { keyFile?: string } = {},
): Promise<RestoreResult> {
  if (!existsSync(file)) throw new RestoreError(`${file} does not exist`);
  const configured = existingSecretKey(target);
  const fromFile = options.keyFile === undefined ? undefined : parseKeyFile(options.keyFile);
  if (fromFile !== undefined && configured !== undefined && !fromFile.equals(configured)) {
    throw new RestoreError(
      "--key-file differs from PORTCULLIS_SECRET_KEY or DATA_DIR/secret.key; give one key",
    );
  }
  const given = fromFile ?? configured;
  return target.databaseUrl === undefined
    ? restoreIntoSqlite(file, target, given)
    : restoreIntoPostgres(file, { ...target, databaseUrl: target.databaseUrl }, given);
}

async function restoreIntoSqlite(
  file: string,
  target: RestoreTarget,
  given: Buffer | undefined,
): Promise<RestoreResult> {
  if (isPgDumpArchive(file)) {
    throw new RestoreError(
      `${file} is a pg_dump archive: restore it with DATABASE_URL set to an empty database`,
    );
  }
  let backup: ReturnType<typeof readSqliteBackup>;
  try {
    backup = readSqliteBackup(file);
  } catch (error) {
    throw new RestoreError((error as Error).message);
  }
  const { meta } = backup;
  if (meta.format !== BACKUP_FORMAT) {
    throw new RestoreError(`${file} has backup format ${meta.format}; this version reads ${BACKUP_FORMAT}`);
  }
  refuseNewerMigrations(backup.migrations, `Portcullis ${meta.portcullis_version}`);
  const databaseFile = sqliteFile(target.dataDir);
  if (!isSqliteTargetEmpty(databaseFile)) {
    throw new RestoreError(`${databaseFile} already holds a database; restore into an empty DATA_DIR`);
  }
  const inBackup = meta.secret_key === null ? undefined : Buffer.from(meta.secret_key, "hex");
  if (inBackup !== undefined && given !== undefined && !inBackup.equals(given)) {
    throw new RestoreError(
      "the backup holds a secret key that differs from the one configured (PORTCULLIS_SECRET_KEY, " +
        "--key-file or DATA_DIR/secret.key); remove that one, the backup's opens its sealed values",
    );
  }
  const key = inBackup ?? given;
  const needed = meta.secret_key_fingerprint;
  if (needed !== null && key === undefined) {
    throw new RestoreError(
      `the backup was taken without its secret key (fingerprint ${needed}): give it with PORTCULLIS_SECRET_KEY or --key-file`,
    );
  }
  if (needed !== null && key !== undefined && keyFingerprint(key) !== needed) {
    throw new RestoreError(
      `that secret key (fingerprint ${keyFingerprint(key)}) is not the backup's (fingerprint ${needed})`,
    );
  }
  mkdirSync(target.dataDir, { recursive: true, mode: 0o700 });
  await restoreSqlite(file, databaseFile);
  const keySource = key === undefined ? "none" : placeKey(target, key, inBackup !== undefined);
  const isKeyVerified = await migrateAndVerify(target, key);
  return {
    database: describeDatabase(target),
    takenAt: meta.created_at,
    takenBy: meta.portcullis_version,
    keySource,
    isKeyVerified,
  };
}

async function restoreIntoPostgres(
  file: string,
  target: RestoreTarget & { databaseUrl: string },
  given: Buffer | undefined,
): Promise<RestoreResult> {
  if (!isPgDumpArchive(file)) {
    throw new RestoreError(
      `${file} is not a pg_dump custom-format archive (a SQLite backup restores with DATABASE_URL unset)`,
    );
  }
  const database = await openDatabase({ ...target, poolSize: 1 });
  try {
    if (!(await new BackupRepository(database.db).isEmpty())) {
      throw new RestoreError(`${describeDatabase(target)} is not empty; restore into an empty database`);
    }
  } finally {
    await database.close();
  }
  await pgRestore(target.databaseUrl, file);
  const isKeyVerified = await migrateAndVerify(target, given);
  return {
    database: describeDatabase(target),
    keySource: given === undefined ? "none" : placeKey(target, given, false),
    isKeyVerified,
  };
}

function refuseNewerMigrations(applied: readonly string[], madeBy: string): void {
  const unknown = applied.filter((name) => !(name in migrations));
  if (unknown.length > 0) {
    throw new RestoreError(
      `the backup was made by ${madeBy}, newer than this one: it has migrations this version lacks (${unknown.join(", ")}); restore it with that version or later`,
    );
  }
}

/** The key goes where `serve` will look: unless PORTCULLIS_SECRET_KEY carries it, DATA_DIR/secret.key. */
function placeKey(target: RestoreTarget, key: Buffer, isFromBackup: boolean): RestoreResult["keySource"] {
  if (target.secretKey !== undefined) return "PORTCULLIS_SECRET_KEY";
  const path = join(target.dataDir, "secret.key");
  if (existsSync(path)) return "DATA_DIR/secret.key"; // equal to `key`: checked before anything was written
  mkdirSync(target.dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(path, key.toString("hex"), { mode: 0o600, flag: "wx" });
  return isFromBackup ? "backup, written to DATA_DIR/secret.key" : "DATA_DIR/secret.key";
}

/** Brings the schema up to this version; true when the key opened a sealed value. */
async function migrateAndVerify(target: RestoreTarget, key: Buffer | undefined): Promise<boolean> {
  const database: DatabaseHandle = await openDatabase({ ...target, poolSize: 1 });
  try {
    const repository = new BackupRepository(database.db);
    refuseNewerMigrations(await repository.appliedMigrations(), "a newer Portcullis");
    await migrateToLatest(database);
    const sealed = await repository.findSealedValue();
    if (sealed === undefined) return false;
    if (key === undefined) {
      throw new RestoreError(
        "restored, but no secret key is configured and the database holds sealed values: set PORTCULLIS_SECRET_KEY (or DATA_DIR/secret.key) to the key of the instance the backup came from",
      );
    }
    try {
      new SecretBox(key).open(sealed);
    } catch {
      throw new RestoreError(
        `restored, but the secret key (fingerprint ${keyFingerprint(key)}) does not open the sealed values: set the key of the instance the backup came from`,
      );
    }
    return true;
  } finally {
    await database.close();
  }
}
