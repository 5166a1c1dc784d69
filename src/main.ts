// Entry point: `portcullis <command>` (cli/commands.ts).
// First: keeps V8 from ever dropping the maps of process.nextTick's objects (see the module).
import "./lib/tick-object-maps.ts";
import { runCli } from "./cli/commands.ts";

process.exitCode = await runCli(process.argv.slice(2));
