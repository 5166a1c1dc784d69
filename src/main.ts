// Entry point: `portcullis <command>` (cli/commands.ts).
import { runCli } from "./cli/commands.ts";

process.exitCode = await runCli(process.argv.slice(2));
