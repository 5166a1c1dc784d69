// Shared by CLI commands: load the configuration or print one line per problem and exit 1.
import { type Config, ConfigError, loadConfig } from "../config/config.ts";

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
