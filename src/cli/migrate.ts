// `portcullis migrate`: apply pending migrations and exit (createDeps migrates).
import { openDeps, recordCli } from "./config.ts";

export const usage = `usage: portcullis migrate

Applies the database migrations this version has and the database lacks, then exits. \`serve\` does
the same at every start; this is for running them ahead of an upgrade or from a deploy script.
`;

export async function run(args: string[]): Promise<number> {
  if (args.length > 0) {
    process.stderr.write(`portcullis: migrate takes no arguments\n\n${usage}`);
    return 2;
  }
  const deps = await openDeps();
  await recordCli(deps, "cli.migrate", {}, 0);
  await deps.close();
  process.stdout.write("database is up to date\n");
  return 0;
}
