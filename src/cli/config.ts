// Shared by CLI commands: the configuration (or one line per problem and exit 1), and the database
// opened with a line saying which one, so nobody edits ./data while meaning /var/lib/portcullis.
import { type Config, ConfigError, loadConfig } from "../config/config.ts";
import { describeDatabase } from "../db/connection.ts";
import { createDeps, type Deps } from "../deps.ts";
import { CliError, messageOf } from "./cli-error.ts";

export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const problem of error.problems) process.stderr.write(`portcullis: ${problem}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/** Opens (and migrates) the configured database, saying which one on stderr. */
export async function openDeps(
  config: Config = loadConfigOrExit(),
  writeError: (text: string) => void = (text) => process.stderr.write(text),
): Promise<Deps> {
  const database = describeDatabase(config);
  writeError(`portcullis: database: ${database}\n`);
  try {
    return await createDeps(config);
  } catch (error) {
    throw new CliError(`cannot open the database (${database}): ${messageOf(error)}`);
  }
}
