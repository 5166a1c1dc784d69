// `portcullis serve` as a real child process for the tests that kill Portcullis itself: its own
// SQLite directory or a scratch PostgreSQL database, the HTTP API over fetch, SIGKILL on demand.
// Every process and scratch database is removed by the cleanup hook the caller passes.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import { type DatabaseHandle, openDatabase } from "../../src/db/connection.ts";
import { waitFor } from "./poll.ts";
import { freePort } from "./ports.ts";
import type { Cleanup } from "./v2ray.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PASSWORD = "correct horse battery";

export type Store = { env: Record<string, string>; open(): Promise<DatabaseHandle> };

/** Where several processes keep one database: a temp DATA_DIR, or a scratch PostgreSQL database. */
export async function sharedStore(cleanup: Cleanup): Promise<Store> {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-proc-"));
  cleanup(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORTCULLIS_SECRET_KEY: randomBytes(32).toString("hex"),
  };
  const base = process.env.DATABASE_URL;
  if (base !== undefined) {
    const name = `portcullis_proc_${randomBytes(5).toString("hex")}`;
    const admin = await openDatabase({ dataDir, databaseUrl: base, poolSize: 1 });
    await sql`CREATE DATABASE ${sql.id(name)}`.execute(admin.db);
    cleanup(async () => {
      await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(admin.db);
      await admin.close();
    });
    const url = new URL(base);
    url.pathname = `/${name}`;
    env.DATABASE_URL = url.toString();
  }
  return { env, open: () => openDatabase({ dataDir, databaseUrl: env.DATABASE_URL, poolSize: 2 }) };
}

export type PortcullisProcess = {
  pid: number;
  port: number;
  baseUrl: string;
  isAlive(): boolean;
  /** What it wrote to stderr (CLI lines) and stdout (the log) so far, the last 20,000 characters each. */
  stderr(): string;
  stdout(): string;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal without waiting. */
  signal(signal: NodeJS.Signals): void;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** An authenticated JSON call; rejects on network errors only. */
  api(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: () => Promise<unknown> }>;
};

export async function startPortcullis(
  cleanup: Cleanup,
  store: Store,
  env: Record<string, string> = {},
): Promise<PortcullisProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src/main.ts"), "serve"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env.PATH ?? "",
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: "warn",
      PORTCULLIS_ADMIN_PASSWORD: PASSWORD,
      ...store.env,
      ...env,
    },
  });
  let stderr = "";
  let stdout = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-20_000);
  });
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout = (stdout + chunk.toString()).slice(-20_000);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  cleanup(() => stop(child, "SIGKILL"));
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitFor(
    () =>
      fetch(`${baseUrl}/health`).then(
        (r) => r.ok,
        () => false,
      ),
    {
      // A cold start through tsx on a loaded 2-core machine takes tens of seconds; at load 40 (eight
      // engineers' tests and benchmarks) it once took over two minutes.
      timeoutMs: 300_000,
      what: `portcullis serve on ${port} (stderr: ${stderr.slice(-500)})`,
    },
  );
  const token = await login(baseUrl);
  return {
    pid: child.pid ?? -1,
    port,
    baseUrl,
    isAlive: () => child.exitCode === null && child.signalCode === null,
    stderr: () => stderr,
    stdout: () => stdout,
    exited,
    signal: (signal) => child.kill(signal),
    kill: (signal = "SIGKILL") => stop(child, signal),
    api: async (method, path, body) => {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, json: async () => (text === "" ? null : JSON.parse(text)) };
    },
  };
}

async function login(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/api/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password: PASSWORD }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill(signal);
  await exited;
}
