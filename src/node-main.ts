// Entry point of the node agent's own bundle (dist/portcullis-node.mjs, scripts/build.mjs):
// bin/portcullis.mjs runs it for `portcullis node …` instead of the panel's bundle, so the agent on a
// proxy host loads only what it uses (no HTTP framework, database drivers or dashboard code) and
// stays small in memory (docs/NODES.md, "Memory"). It behaves as `portcullis node` does through
// cli/commands.ts: --help prints the usage, a CliError is one line on stderr with its exit code.
import { CliError } from "./cli/cli-error.ts";
import { run, usage } from "./cli/node.ts";

async function main(argv: string[]): Promise<number> {
  const args = argv[0] === "node" ? argv.slice(1) : argv;
  if (args.some((arg) => arg === "--help" || arg === "-h")) {
    process.stdout.write(usage);
    return 0;
  }
  try {
    return await run(args);
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    process.stderr.write(`portcullis: ${error.message}\n`);
    return error.exitCode;
  }
}

process.exitCode = await main(process.argv.slice(2));
