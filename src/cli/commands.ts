// The command line: `portcullis <command>`. Commands load lazily so the CLI starts fast and `lobby`
// needs no database. `--help` (or `-h`) anywhere prints that command's help and never runs it; no
// command at all prints the overview, so a bare `npm run cli` does not start a server by surprise.
import { packageVersion } from "../lib/version.ts";
import { CliError } from "./cli-error.ts";

type Command = { usage: string; run: (args: string[]) => Promise<number> };

const commands: Record<string, { summary: string; load: () => Promise<Command> }> = {
  serve: {
    summary: "run the HTTP API and the background jobs (what `npm start` runs)",
    load: () => import("./serve.ts"),
  },
  migrate: { summary: "apply pending database migrations and exit", load: () => import("./migrate.ts") },
  admin: {
    summary: "create an admin (with a role), or reset an admin's password",
    load: () => import("./admin.ts"),
  },
  templates: {
    summary: "install the starter inbound templates, or list templates",
    load: () => import("./templates.ts"),
  },
  users: {
    summary: "list, create and show users, or grant a user an inbound",
    load: () => import("./users.ts"),
  },
  import: {
    summary: "import Marzban, PasarGuard or 3x-ui: users, credentials, inbounds, old subscription URLs",
    load: () => import("./import.ts"),
  },
  access: { summary: "grant one inbound to many users at once", load: () => import("./access.ts") },
  groups: {
    summary: "groups of inbounds: list, create, add inbounds, list or change members",
    load: () => import("./groups.ts"),
  },
  plans: {
    summary: "plans users are created and renewed with: list, create (docs/PLANS.md)",
    load: () => import("./plans.ts"),
  },
  backup: {
    summary: "write a consistent backup of the database to a file, while the service runs",
    load: () => import("./backup.ts"),
  },
  restore: {
    summary: "restore a backup into an empty data directory or database",
    load: () => import("./restore.ts"),
  },
  node: {
    summary: "the agent on a proxy host: `node join '<string>'` once, then `node run` (docs/NODES.md)",
    load: () => import("./node.ts"),
  },
  lobby: {
    summary: "encode or decode the proto2 lobby messages (no database)",
    load: () => import("./lobby.ts"),
  },
};

function overview(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length)) + 2;
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}${c.summary}`);
  return `portcullis ${packageVersion}: admin service for Xray-core / V2Ray proxy fleets

usage: portcullis <command> [options]

commands:
${lines.join("\n")}
  ${"help".padEnd(width)}this overview; \`portcullis help <command>\` or \`portcullis <command> --help\` for one

Settings are environment variables (DATA_DIR, DATABASE_URL, HOST, PORT, ...): see README.md.
Commands that open the database say which one on stderr.
`;
}

const isHelpFlag = (arg: string) => arg === "--help" || arg === "-h";

export type CliOutput = { stdout: (text: string) => void; stderr: (text: string) => void };

const processOutput: CliOutput = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** Runs one command line; the exit code. A CliError is one line on stderr, never a stack trace. */
export async function runCli(argv: string[], out: CliOutput = processOutput): Promise<number> {
  try {
    return await dispatch(argv, out);
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    out.stderr(`portcullis: ${error.message}\n`);
    return error.exitCode;
  }
}

async function dispatch(argv: string[], out: CliOutput): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || isHelpFlag(name) || (name === "help" && args.length === 0)) {
    out.stdout(overview());
    return 0;
  }
  if (name === "--version" || name === "-v") {
    out.stdout(`${packageVersion}\n`);
    return 0;
  }
  const wanted = name === "help" ? (args[0] ?? "") : name;
  const entry = commands[wanted];
  if (entry === undefined) {
    out.stderr(`portcullis: unknown command "${wanted}"\n\n${overview()}`);
    return 2;
  }
  const command = await entry.load();
  if (name === "help" || args.some(isHelpFlag)) {
    out.stdout(command.usage);
    return 0;
  }
  return command.run(args);
}
