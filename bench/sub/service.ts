// The service under test in the subscription benchmarks (run.ts, ab.ts): a seeded database, and
// `portcullis serve` started from a bundle as `npm start` runs it, pinned to a CPU, then waited for
// until every user is in memory (the index statistics, through the admin API).
import { join } from "node:path";
import { sql } from "kysely";
import pino from "pino";
import { loadConfig } from "../../src/config/config.ts";
import { createDeps } from "../../src/deps.ts";
import { interrupted, type Pinned, startPinned } from "../lib/processes.ts";
import type { CacheUse, Dialect } from "./report.ts";
import { type Seeded, seed } from "./seed.ts";

export const SECRET_KEY = "00".repeat(32);
const ADMIN_PASSWORD = "bench-password";

/** The malloc settings, as npm start sets them (test/start-flags.test.ts keeps them alike). */
export const MALLOC_ENV = {
  MALLOC_ARENA_MAX: "1",
  MALLOC_MMAP_THRESHOLD_: "131072",
  MALLOC_TRIM_THRESHOLD_: "131072",
  GLIBC_TUNABLES: "glibc.malloc.hugetlb=1",
} as const;

/**
 * V8's compiler settings of npm start: the fastify and limit targets run with them too, so that the
 * references are the fastest those servers are on this Node.js, not servers with V8's defaults.
 */
export const V8_COMPILER_ARGS = [
  "--max-inlined-bytecode-size=920",
  "--max-inlined-bytecode-size-cumulative=2760",
] as const;

/** npm start's node options (package.json), before the bundle. */
export const START_NODE_ARGS = [
  "--enable-source-maps",
  "--expose-gc",
  "--max-semi-space-size=16",
  "--heap-growing-percent=50",
  ...V8_COMPILER_ARGS,
] as const;

/** As `npm start` runs the service (package.json), with the bundle `bundle` (scripts/build.mjs makes dist/portcullis.mjs). */
export function startArgs(bundle: string): string[] {
  return [...START_NODE_ARGS, bundle];
}

export type ServiceOptions = {
  root: string;
  bundle: string;
  cpu: number;
  dataDir: string;
  databaseUrl: string | undefined;
  /** PORTCULLIS_SUB_CACHE_MAX_AGE_MS (undefined: the service's default). */
  maxAgeMs: number | undefined;
  /** Node.js options before the bundle's own (e.g. --cpu-prof). */
  nodeArgs: readonly string[];
};

export function startService(options: ServiceOptions): (port: number) => Pinned {
  const { maxAgeMs, databaseUrl } = options;
  return (port) =>
    startPinned(process.execPath, [...options.nodeArgs, ...startArgs(options.bundle), "serve"], {
      cpu: options.cpu,
      cwd: options.root,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        HOST: "127.0.0.1",
        PORT: String(port),
        DATA_DIR: options.dataDir,
        ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
        LOG_LEVEL: "warn",
        ...MALLOC_ENV,
        ...(maxAgeMs === undefined ? {} : { PORTCULLIS_SUB_CACHE_MAX_AGE_MS: String(maxAgeMs) }),
        PORTCULLIS_ADMIN_PASSWORD: ADMIN_PASSWORD,
        PORTCULLIS_SECRET_KEY: SECRET_KEY,
      },
    });
}

/** The admin calls around the rounds: the service under wrk's load on a machine at load 40 once took over 10 s. */
const ADMIN_CALL_TIMEOUT_MS = 60_000;

export async function adminToken(baseUrl: string): Promise<string> {
  const login = await fetch(`${baseUrl}/api/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password: ADMIN_PASSWORD }),
    signal: AbortSignal.timeout(ADMIN_CALL_TIMEOUT_MS),
  });
  if (!login.ok) throw new Error(`admin login for the index statistics: ${login.status}`);
  return ((await login.json()) as { access_token: string }).access_token;
}

/** The service's index statistics, through the admin API. */
export async function readServiceCache(baseUrl: string, token: string): Promise<CacheUse> {
  const res = await fetch(`${baseUrl}/api/subscriptions/cache`, {
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(ADMIN_CALL_TIMEOUT_MS),
  });
  if (!res.ok) throw new Error(`GET /api/subscriptions/cache: ${res.status}`);
  const body = (await res.json()) as Record<string, number>;
  const field = (name: string) => body[name] ?? Number.NaN;
  return {
    entries: field("entries"),
    bytes: field("bytes"),
    budgetBytes: field("budget_bytes"),
    layouts: field("layouts"),
    hits: field("hits"),
    misses: field("misses"),
  };
}

/** Polls the statistics until every user is in memory (entries = users), or throws after `deadlineMs`. */
export async function waitUntilIndexed(
  baseUrl: string,
  token: string,
  users: number,
  deadlineMs: number,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    interrupted.throwIfAborted();
    const { entries } = await readServiceCache(baseUrl, token);
    if (entries >= users) return;
    if (Date.now() > deadline)
      throw new Error(`only ${entries} of ${users} users in memory after the deadline`);
    await new Promise((done) => setTimeout(done, 250));
  }
}

/** Seeds `users` users (keep(i): remember the i-th user's name and credentials) and names the database. */
export async function seedDatabase(
  dialect: Dialect,
  dataDir: string,
  url: string | undefined,
  users: number,
  keep: (index: number) => boolean,
  withHosts = false,
): Promise<{ seeded: Seeded; databaseVersion: string }> {
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: url,
    PORTCULLIS_SECRET_KEY: SECRET_KEY,
    PORTCULLIS_CORE_TIMEOUT_MS: "1000",
  });
  const deps = await createDeps(config, { logger: pino({ level: "silent" }) });
  try {
    const seeded = await seed(deps, users, keep, interrupted, dataDir, withHosts);
    const version =
      dialect === "postgres"
        ? sql<{ v: string }>`SELECT current_setting('server_version') AS v`
        : sql<{ v: string }>`SELECT sqlite_version() AS v`;
    const { rows } = await version.execute(deps.database.db);
    const databaseVersion = `${dialect === "postgres" ? "PostgreSQL" : "SQLite"} ${rows[0]?.v ?? "?"}`;
    return { seeded, databaseVersion };
  } finally {
    await deps.close();
  }
}

/** The bundle scripts/build.mjs makes. */
export function builtBundle(root: string): string {
  return join(root, "dist/portcullis.mjs");
}
