// PostgreSQL backups are pg_dump's custom format, restored with pg_restore: the tools every
// PostgreSQL operator already trusts, consistent by their own snapshot while the service writes, and
// readable without Portcullis. The password travels in PGPASSWORD, never on a command line (`ps`).
import { spawn } from "node:child_process";
import { closeSync, openSync, readSync } from "node:fs";
import { inheritedEnvironment } from "../../config/config.ts";

/** A connection URI for libpq without the password, and the environment that carries it. */
export function libpqTarget(databaseUrl: string): { uri: string; env: Record<string, string> } {
  const url = new URL(databaseUrl);
  const password = decodeURIComponent(url.password);
  url.password = "";
  return { uri: url.toString(), env: password === "" ? {} : { PGPASSWORD: password } };
}

export async function pgDump(databaseUrl: string, file: string, schema?: string): Promise<void> {
  const { uri, env } = libpqTarget(databaseUrl);
  const only = schema === undefined ? [] : [`--schema=${schema}`];
  await runTool(
    "pg_dump",
    ["--format=custom", "--no-owner", "--no-privileges", ...only, `--file=${file}`, `--dbname=${uri}`],
    env,
  );
}

/**
 * Into an empty database, all or nothing. `--no-owner --no-privileges`: the target's owner need not
 * have the source's roles; `--no-comments`: the dump's COMMENT ON EXTENSION pg_trgm needs a superuser.
 */
export async function pgRestore(databaseUrl: string, file: string): Promise<void> {
  const { uri, env } = libpqTarget(databaseUrl);
  await runTool(
    "pg_restore",
    [
      "--no-owner",
      "--no-privileges",
      "--no-comments",
      "--exit-on-error",
      "--single-transaction",
      `--dbname=${uri}`,
      file,
    ],
    env,
  );
}

/** pg_dump's custom format starts with these five bytes. */
export function isPgDumpArchive(file: string): boolean {
  const fd = openSync(file, "r");
  try {
    const head = Buffer.alloc(5);
    return readSync(fd, head, 0, 5, 0) === 5 && head.toString("latin1") === "PGDMP";
  } finally {
    closeSync(fd);
  }
}

function runTool(tool: string, args: string[], env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, {
      env: { ...inheritedEnvironment(), ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.on("error", (error: NodeJS.ErrnoException) => {
      reject(
        error.code === "ENOENT"
          ? new Error(`${tool} not found: install the PostgreSQL client tools (Debian: postgresql-client)`)
          : error,
      );
    });
    child.on("close", (code) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(`${tool} failed (exit ${code}): ${stderr.trim().split("\n").slice(-3).join(" / ")}`),
        );
    });
  });
}
