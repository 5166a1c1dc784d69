// Taking a backup of the database this process is configured with, from the CLI (a connection of
// its own) or from `serve`'s scheduled job (the service's connection). SQLite: the online backup API
// into one file that can also hold the secret key; PostgreSQL: pg_dump, without the key.
import { closeSync, existsSync, openSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { packageVersion } from "../../lib/version.ts";
import { BACKUP_FORMAT, type BackupMeta, keyFingerprint, writeAtomically } from "./backup-meta.ts";
import { pgDump } from "./pg-dump.ts";
import { backupSqlite } from "./sqlite-backup.ts";

export type BackupSource =
  | { dialect: "sqlite"; connection: BetterSqlite3.Database; pagesPerStep: number }
  | {
      dialect: "postgres";
      databaseUrl: string /** Only this schema (tests isolate themselves in one). */;
      schema?: string | undefined;
    };

export type BackupResult = {
  file: string;
  bytes: number;
  durationMs: number;
  isKeyIncluded: boolean;
  /** What the operator must know about the key; always said, once per backup. */
  keyNote: string;
};

const SEALED = "server API credentials, certificate private keys, inbound secrets, the ACME account key";

export class BackupService {
  constructor(
    private readonly source: BackupSource,
    /** The key the sealed values were made with; undefined when none exists yet. */
    private readonly secretKey: Buffer | undefined,
  ) {}

  async backup(file: string, options: { withKey: boolean }): Promise<BackupResult> {
    if (existsSync(file)) throw new Error(`${file} already exists; choose another name`);
    if (!existsSync(dirname(file))) throw new Error(`directory ${dirname(file)} does not exist`);
    const startedMs = performance.now();
    const isKeyIncluded = options.withKey && this.source.dialect === "sqlite" && this.secretKey !== undefined;
    if (this.source.dialect === "sqlite") {
      await backupSqlite(this.source.connection, file, this.#meta(isKeyIncluded), this.source.pagesPerStep);
    } else {
      const { databaseUrl, schema } = this.source;
      await writeAtomically(file, async (partial) => {
        closeSync(openSync(partial, "wx", 0o600)); // pg_dump writes into it and keeps the mode
        await pgDump(databaseUrl, partial, schema);
      });
    }
    return {
      file,
      bytes: statSync(file).size,
      durationMs: Math.round(performance.now() - startedMs),
      isKeyIncluded,
      keyNote: this.#keyNote(isKeyIncluded),
    };
  }

  #meta(isKeyIncluded: boolean): BackupMeta {
    return {
      format: BACKUP_FORMAT,
      created_at: new Date().toISOString(),
      portcullis_version: packageVersion,
      secret_key: isKeyIncluded && this.secretKey !== undefined ? this.secretKey.toString("hex") : null,
      secret_key_fingerprint: this.secretKey === undefined ? null : keyFingerprint(this.secretKey),
    };
  }

  #keyNote(isKeyIncluded: boolean): string {
    if (this.secretKey === undefined) return "no secret key exists yet, so nothing in the database is sealed";
    const fingerprint = keyFingerprint(this.secretKey);
    if (isKeyIncluded) {
      return `the secret key (fingerprint ${fingerprint}) is in the backup: the file opens every sealed value in it (${SEALED}); keep it as private as the data directory`;
    }
    return `the secret key is NOT in the backup: keep PORTCULLIS_SECRET_KEY or DATA_DIR/secret.key (fingerprint ${fingerprint}) with it; without that key the ${SEALED} cannot be opened after a restore`;
  }
}
