// test ring: outer (starts Node processes of its own; scripts/run-tests.ts keeps it out of test:fast)
// The CLI as a newcomer meets it: no command prints the overview (it does not start a server),
// `--help` and `help <command>` print that command's help and never run it, mistakes are usage
// errors (exit 2) without stack traces, and commands that open a database say which one.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

import { runCli } from "./commands.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), "portcullis-cli-"));
after(() => rmSync(dataDir, { recursive: true, force: true }));
// In-process runs read their settings from this process: if one ran by mistake, it would open an
// empty temp directory (that the tests check stays empty), never ./data or the suite's PostgreSQL.
process.env.DATA_DIR = join(dataDir, "in-process");
delete process.env.DATABASE_URL;

const COMMANDS = ["serve", "migrate", "admin", "templates", "users", "access", "backup", "restore", "lobby"];

type Result = { status: number; stdout: string; stderr: string };

async function inProcess(args: string[]): Promise<Result> {
  const result = { status: 0, stdout: "", stderr: "" };
  result.status = await runCli(args, {
    stdout: (text) => {
      result.stdout += text;
    },
    stderr: (text) => {
      result.stderr += text;
    },
  });
  return result;
}

/** A real process (`npm run cli` or the bin), on an empty DATA_DIR and no DATABASE_URL unless given. */
function spawned(command: string, args: string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", DATA_DIR: join(dataDir, "data"), ...env },
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        const status = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        resolve({ status, stdout, stderr });
      },
    );
  });
}

test("`npm run cli` without a command prints the overview and exits 0 instead of serving", async () => {
  const result = await spawned("npm", ["run", "-s", "cli"]);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /^portcullis \d+\.\d+\.\d+: /);
  assert.equal(existsSync(join(dataDir, "data")), false, "no database was opened");
});

test("`help`, `--help` and `-h` print the overview listing every command, exit 0", async () => {
  for (const args of [[], ["help"], ["--help"], ["-h"]]) {
    const result = await inProcess(args);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /^portcullis \d+\.\d+\.\d+: /);
    for (const name of COMMANDS) assert.match(result.stdout, new RegExp(`\\n  ${name} +\\S`), name);
  }
});

test("every command has help (`--help`, `-h`, `help <command>`) and is not run by asking for it", async () => {
  const asks = COMMANDS.flatMap((name) => [
    [name, "--help"],
    [name, "-h"],
    ["help", name],
  ]);
  // Spelled after arguments that would otherwise run the command:
  asks.push(["admin", "create", "--username", "x", "--help"], ["backup", join(dataDir, "x.db"), "--help"]);
  for (const args of asks) {
    const result = await inProcess(args);
    const name = args[0] === "help" ? args[1] : args[0];
    assert.equal(result.status, 0, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stdout, new RegExp(`^usage: portcullis ${name}\\b`), args.join(" "));
    assert.equal(result.stderr, "", args.join(" "));
  }
  assert.deepEqual(readdirSync(dataDir), [], "no command ran: no database, no backup file");
});

test("an unknown command or option is a usage error with exit 2, no stack trace", async () => {
  const cases = [
    ["frobnicate"],
    ["help", "frobnicate"],
    ["admin", "create", "--bogus"],
    ["backup"],
    ["restore", "a", "b"],
  ];
  for (const args of cases) {
    const result = await inProcess(args);
    assert.equal(result.status, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.match(result.stderr, /^portcullis: /);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
  }
});

test("commands that open the database say which one first; a password in DATABASE_URL is not shown", async () => {
  const migrate = await spawned(process.execPath, ["bin/portcullis.mjs", "migrate"], { LOG_LEVEL: "silent" });
  assert.equal(migrate.status, 0, migrate.stderr);
  assert.equal(migrate.stderr, `portcullis: database: SQLite ${join(dataDir, "data", "portcullis.db")}\n`);
  assert.deepEqual(readdirSync(join(dataDir, "data")).sort(), ["portcullis.db", "secret.key"]);
  const postgres = await spawned(process.execPath, ["bin/portcullis.mjs", "migrate"], {
    DATABASE_URL: "postgres://someone:hunter2secret@127.0.0.1:1/nowhere",
  });
  assert.equal(postgres.status, 1);
  const [first, second, ...rest] = postgres.stderr.trim().split("\n");
  assert.equal(first, "portcullis: database: PostgreSQL someone@127.0.0.1:1/nowhere");
  assert.match(
    second ?? "",
    /^portcullis: cannot open the database \(PostgreSQL someone@127\.0\.0\.1:1\/nowhere\): /,
  );
  assert.deepEqual(rest, []);
  assert.doesNotMatch(postgres.stderr, /hunter2secret/);
});
