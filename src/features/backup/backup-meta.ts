// What a SQLite backup says about itself (the `portcullis_backup` table), and the secret key's
// fingerprint, which tells whether a key is the one a backup's sealed values need without holding it.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, linkSync, readFileSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";

export const META_TABLE = "portcullis_backup";
export const BACKUP_FORMAT = "1";

/** Rows of META_TABLE; every value is text. */
export type BackupMeta = {
  format: string;
  created_at: string;
  portcullis_version: string;
  /** Hex; null when the backup was taken without the key. */
  secret_key: string | null;
  /** keyFingerprint() of the key the sealed values were made with; null when none was found. */
  secret_key_fingerprint: string | null;
};

/** 16 hex characters of SHA-256 over the key: enough to tell keys apart, useless to open anything. */
export function keyFingerprint(key: Buffer): string {
  return createHash("sha256")
    .update("portcullis secret key fingerprint\n")
    .update(key)
    .digest("hex")
    .slice(0, 16);
}

/** Where a file is written before it gets its name: same directory, so the rename is atomic. */
export function partialPath(file: string): string {
  return join(dirname(file), `.${basename(file)}.${randomBytes(4).toString("hex")}.partial`);
}

/**
 * Writes under a temporary name beside `file` and links it to `file` only once complete: a backup
 * cut short never carries a backup's name, and a file that appeared meanwhile is never replaced.
 */
export async function writeAtomically(
  file: string,
  write: (partial: string) => Promise<void>,
): Promise<void> {
  const partial = partialPath(file);
  try {
    await write(partial);
    linkSync(partial, file);
  } finally {
    rmSync(partial, { force: true });
  }
}

/** PORTCULLIS_SECRET_KEY, or DATA_DIR/secret.key if it exists; never creates one (unlike serve). */
export function existingSecretKey(config: {
  secretKey: Buffer | undefined;
  dataDir: string;
}): Buffer | undefined {
  if (config.secretKey !== undefined) return config.secretKey;
  const path = join(config.dataDir, "secret.key");
  return existsSync(path) ? parseKeyFile(path) : undefined;
}

export function parseKeyFile(path: string): Buffer {
  const key = Buffer.from(readFileSync(path, "utf8").trim(), "hex");
  if (key.length !== 32) throw new Error(`${path} does not hold a 32-byte hex key`);
  return key;
}
