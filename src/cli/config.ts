// Shared by CLI commands: the configuration (or one line per problem and exit 1), and the database
// opened with a line saying which one, so nobody edits ./data while meaning /var/lib/portcullis.
import { userInfo } from "node:os";
import { type Config, ConfigError, loadConfig } from "../config/config.ts";
import { describeDatabase } from "../db/connection.ts";
import { createDeps, type Deps, type DepsOptions } from "../deps.ts";
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

/**
 * Records a state-changing command in the audit log, whatever its outcome (exit code 0: succeeded).
 * The actor is the operating-system user who ran it; never an argument's value that is a secret.
 */
export async function recordCli(
  deps: Deps,
  action: string,
  targets: Record<string, string>,
  exitCode: number,
): Promise<void> {
  await deps.services.audit
    .record(
      {
        actor: { kind: "cli", id: null, name: osUser(), tokenId: null },
        action,
        method: null,
        route: null,
        targets,
        ip: null,
        requestId: null,
      },
      exitCode === 0 ? 200 : 400,
    )
    .catch((error: unknown) =>
      process.stderr.write(`portcullis: not recorded in the audit log: ${messageOf(error)}\n`),
    );
}

function osUser(): string {
  try {
    return `${userInfo().username} (pid ${process.pid})`;
  } catch {
    return `uid ${process.getuid?.() ?? "?"} (pid ${process.pid})`;
  }
}

/** Opens (and migrates) the configured database, saying which one on stderr. */
export async function openDeps(
  config: Config = loadConfigOrExit(),
  writeError: (text: string) => void = (text) => process.stderr.write(text),
  options: DepsOptions = {},
): Promise<Deps> {
  const database = describeDatabase(config);
  writeError(`portcullis: database: ${database}\n`);
  try {
    return await createDeps(config, options);
  } catch (error) {
    throw new CliError(`cannot open the database (${database}): ${messageOf(error)}`);
  }
}
