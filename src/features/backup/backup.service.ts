// Taking a backup of the database this process is configured with, from the CLI (a connection of
// its own) or from `serve`'s scheduled job (the service's connection). SQLite: the online backup API
// into one file that can also hold the secret key; PostgreSQL: pg_dump, without the key.
import { closeSync, existsSync, openSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import { packageVersion } from "../../lib/version.ts";
import { BACKUP_FORMAT, type BackupMeta, keyFingerprint, writeAtomically } from "./backup-meta.ts";
import { pgDump } from "./pg-dump.ts";
import { backupSqlite, countSealedValues } from "./sqlite-backup.ts";

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
  /** Sealed values in a SQLite backup by `table.column` (what its key opens); undefined for PostgreSQL. */
  sealed: Record<string, number> | undefined;
  /** What the operator must know about the key; always said, once per backup. */
  keyNote: string;
};

/** What each sealed column holds, in an operator's words (docs/SECURITY.md has the same table). */
const SEALED_MEANING: Record<string, string> = {
  "servers.api_credentials_sealed": "server API credentials (core client keys, bearer tokens)",
  "certificates.private_key_sealed": "TLS certificate private keys",
  "acme_accounts.account_key_sealed": "ACME account keys",
  "server_inbounds.secrets_sealed": "inbound secrets (REALITY private keys, Shadowsocks-2022 server keys)",
  "admins.totp_secret_sealed": "admins' two-factor (TOTP) secrets",
  "webhooks.secret_sealed": "webhook signing secrets",
  "admin_telegram.bot_token_sealed": "admins' Telegram bot tokens",
  "node_authority.ca_key_sealed": "the node certificate authority's private key",
  "node_authority.client_key_sealed": "the node client private key",
};
const SEALED = [...new Set(Object.values(SEALED_MEANING))].join("; ");

/** "3 × server API credentials (…); 1 × …" for the sealed values a backup holds. */
export function describeSealed(counts: Record<string, number>): string {
  const parts = Object.entries(counts).map(([column, n]) => `${n} × ${SEALED_MEANING[column] ?? column}`);
  return parts.length === 0
    ? "no sealed values yet (but every one added later to a restore of it)"
    : parts.join("; ");
}

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
    const sealed = this.source.dialect === "sqlite" ? countSealedValues(file) : undefined;
    return {
      file,
      bytes: statSync(file).size,
      durationMs: Math.round(performance.now() - startedMs),
      isKeyIncluded,
      sealed,
      keyNote: this.#keyNote(isKeyIncluded, sealed),
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

  #keyNote(isKeyIncluded: boolean, sealed: Record<string, number> | undefined): string {
    if (this.secretKey === undefined) return "no secret key exists yet, so nothing in the database is sealed";
    const fingerprint = keyFingerprint(this.secretKey);
    if (isKeyIncluded) {
      const holds = sealed === undefined ? SEALED : describeSealed(sealed);
      return (
        `WARNING: THE SECRET KEY (fingerprint ${fingerprint}) IS IN THIS BACKUP. Whoever has the file ` +
        `can open every sealed value in it: ${holds}. Keep the file as private as the data directory, ` +
        "or take backups with --without-key (scheduled: PORTCULLIS_BACKUP_WITH_KEY=false) and keep the key apart"
      );
    }
    return `the secret key is NOT in the backup: keep PORTCULLIS_SECRET_KEY or DATA_DIR/secret.key (fingerprint ${fingerprint}) with it; without that key the ${SEALED} cannot be opened after a restore`;
  }
}
