// `portcullis backup <file> [--without-key]`: a consistent backup while `serve` runs. It opens the
// database itself and never migrates it (the running service may be an older version).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { describeDatabase, loadSqlite, sqliteFile } from "../db/connection.ts";
import { BackupService, type BackupSource } from "../features/backup/backup.service.ts";
import { existingSecretKey } from "../features/backup/backup-meta.ts";
import { ALL_PAGES } from "../features/backup/sqlite-backup.ts";
import { CliError, messageOf, parseOptions } from "./cli-error.ts";
import { loadConfigOrExit } from "./config.ts";

export const usage = `usage: portcullis backup <file> [--without-key]

Writes a backup of the configured database to <file> (which must not exist), consistent while
\`serve\` runs and writes; restore it with \`portcullis restore <file>\`.

SQLite (DATA_DIR): SQLite's online backup API copies the database into one file (mode 0600). The
  secret key goes into the file too, and it opens every sealed value in it: server API credentials,
  TLS private keys, REALITY and Shadowsocks-2022 keys, ACME account keys, admins' TOTP secrets,
  webhook secrets, Telegram bot tokens, node CA keys. The file alone restores everything, and
  exposes all of that: keep it as private as the data directory (the command says what it holds).
  --without-key  leave the key out; keep PORTCULLIS_SECRET_KEY or DATA_DIR/secret.key with the backup
PostgreSQL (DATABASE_URL): runs pg_dump --format=custom (needs pg_dump of the server's major version
  or newer on PATH). The key is never in it: keep PORTCULLIS_SECRET_KEY with the backup.

Scheduled backups with retention: PORTCULLIS_BACKUP_DIR (docs/DEPLOY.md).
`;

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions(usage, () =>
    parseArgs({
      args,
      allowPositionals: true,
      options: { "without-key": { type: "boolean" } },
      strict: true,
    }),
  );
  if (positionals.length !== 1 || positionals[0] === "") {
    throw new CliError(`give exactly one file to write\n\n${usage}`, 2);
  }
  const file = resolve(positionals[0] as string);
  const config = loadConfigOrExit();
  process.stderr.write(`portcullis: database: ${describeDatabase(config)}\n`);
  const { source, close } = openSource(config);
  try {
    const result = await new BackupService(source, existingSecretKey(config)).backup(file, {
      withKey: values["without-key"] !== true,
    });
    const mib = (result.bytes / 1024 / 1024).toFixed(1);
    process.stdout.write(`backup written: ${result.file} (${mib} MiB in ${result.durationMs} ms)\n`);
    process.stderr.write(`portcullis: ${result.keyNote}\n`);
    return 0;
  } catch (error) {
    throw new CliError(`backup failed: ${messageOf(error)}`);
  } finally {
    close();
  }
}

function openSource(config: ReturnType<typeof loadConfigOrExit>): { source: BackupSource; close(): void } {
  if (config.databaseUrl !== undefined) {
    return { source: { dialect: "postgres", databaseUrl: config.databaseUrl }, close: () => undefined };
  }
  const file = sqliteFile(config.dataDir);
  if (!existsSync(file)) throw new CliError(`no database at ${file}: is DATA_DIR right?`);
  const SQLite = loadSqlite();
  const connection = new SQLite(file, { readonly: true, fileMustExist: true });
  connection.pragma("busy_timeout = 5000");
  // A connection of its own: one step, one read transaction, a snapshot the service's writes cannot restart.
  return {
    source: { dialect: "sqlite", connection, pagesPerStep: ALL_PAGES },
    close: () => connection.close(),
  };
}
