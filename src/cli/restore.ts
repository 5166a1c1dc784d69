// `portcullis restore <file> [--key-file PATH]`: a backup into an empty data directory or database
// (features/backup/restore.ts), then this version's migrations and a check that the key fits.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { describeDatabase } from "../db/connection.ts";
import { restoreBackup } from "../features/backup/restore.ts";
import { CliError, messageOf, parseOptions } from "./cli-error.ts";
import { loadConfigOrExit } from "./config.ts";

export const usage = `usage: portcullis restore <file> [--key-file PATH]

Restores a backup made by \`portcullis backup\` (or by PORTCULLIS_BACKUP_DIR) into the configured
database, which must be empty: a new DATA_DIR for SQLite, an empty database in DATABASE_URL for a
pg_dump archive. Stop \`serve\` first if one runs on that target. Then brings the schema up to this
version and checks that the secret key opens the sealed values.

The key: a SQLite backup usually holds it and restore writes it to DATA_DIR/secret.key. Otherwise
give the key of the instance the backup came from: PORTCULLIS_SECRET_KEY, or
  --key-file PATH  a file holding the 64 hex characters (a copy of the old DATA_DIR/secret.key)
`;

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseOptions(usage, () =>
    parseArgs({ args, allowPositionals: true, options: { "key-file": { type: "string" } }, strict: true }),
  );
  if (positionals.length !== 1 || positionals[0] === "") {
    throw new CliError(`give exactly one backup file\n\n${usage}`, 2);
  }
  const file = resolve(positionals[0] as string);
  const config = loadConfigOrExit();
  process.stderr.write(`portcullis: database: ${describeDatabase(config)}\n`);
  const keyFile = values["key-file"];
  try {
    const result = await restoreBackup(
      file,
      config,
      keyFile === undefined ? {} : { keyFile: resolve(keyFile) },
    );
    const taken =
      result.takenAt === undefined ? "" : ` (taken ${result.takenAt} by Portcullis ${result.takenBy})`;
    process.stdout.write(`restored ${file}${taken} into ${result.database}\n`);
    const verified = result.isKeyVerified
      ? "it opens the sealed values"
      : "the database holds no sealed values";
    process.stdout.write(`secret key: ${result.keySource}; ${verified}\n`);
    return 0;
  } catch (error) {
    throw new CliError(`restore failed: ${messageOf(error)}`);
  }
}
