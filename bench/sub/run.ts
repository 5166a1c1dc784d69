// `npm run bench:sub [-- --users N --duration S --warmup S --connections C --dialects sqlite,postgres
// --write docs/BENCHMARKS.md --smoke]`: seeds N users (default 100,000) with 5 grants each, then
// measures GET /sub/{user_id} of `portcullis serve` (own process, CPU 0) with wrk (CPU 1) rotating
// over every user id, and the ceiling: a bare Fastify process on CPU 0 sending a body of the same
// size, with identical wrk settings. Reports requests/s, p50, p99, errors, peak RSS, sub/ceiling.
// Exits 1 if any request errored; a body that is not 5 valid links aborts the run (CI: --smoke).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import pino from "pino";
import { loadConfig } from "../../src/config/config.ts";
import { createDeps } from "../../src/deps.ts";
import { freePort } from "../../test/support/ports.ts";
import { describeCode, describeMachine } from "../lib/machine.ts";
import { createScratchDatabase, type ScratchDatabase } from "../lib/pg-scratch.ts";
import { interrupted, type Pinned, startPinned, stop, waitForHttp } from "../lib/processes.ts";
import { sampleRss } from "../lib/rss.ts";
import { prng } from "../lib/stats.ts";
import { runWrk, totalErrors, type WrkResult, type WrkSettings } from "../lib/wrk.ts";
import {
  type CacheUse,
  type Dialect,
  type DialectResult,
  type Measured,
  renderReport,
  writeResults,
} from "./report.ts";
import { LINKS_PER_USER, seed } from "./seed.ts";
import { checkSubscriptions, type Sample } from "./validate.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string" },
    duration: { type: "string" },
    warmup: { type: "string" },
    connections: { type: "string", default: "64" },
    threads: { type: "string", default: "1" },
    timeout: { type: "string", default: "10" },
    dialects: { type: "string", default: "sqlite,postgres" },
    write: { type: "string" },
    smoke: { type: "boolean", default: false },
  },
});
function usage(message: string): never {
  console.error(message);
  process.exit(2);
}

/** A positive integer option, or exit 2 naming it. */
function count(name: string, text: string): number {
  const value = Number(text);
  if (Number.isInteger(value) && value > 0) return value;
  return usage(`--${name} must be a positive integer, got "${text}"`);
}
const USERS = count("users", values.users ?? (values.smoke ? "1000" : "100000"));
const WARMUP_SECONDS = count("warmup", values.warmup ?? (values.smoke ? "2" : "5"));
const WRK: WrkSettings = {
  threads: count("threads", values.threads),
  connections: count("connections", values.connections),
  durationSeconds: count("duration", values.duration ?? (values.smoke ? "5" : "20")),
  timeoutSeconds: count("timeout", values.timeout),
  cpu: 1,
};
const DIALECTS = values.dialects.split(",").map((name) => {
  if (name === "sqlite" || name === "postgres") return name;
  return usage(`--dialects takes sqlite and/or postgres, got "${name}"`);
});
const SERVER_CPU = 0;
const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = resolve(HERE, "../..");
const LUA = join(HERE, "rotate.lua");
const SECRET_KEY = "00".repeat(32);
const ADMIN_PASSWORD = "bench-password";
/** As `npm start` runs the service: the bundle scripts/build.mjs makes (built once per run, in main). */
const START_ARGS = ["--enable-source-maps", join(ROOT, "dist/portcullis.mjs")];
/** For a closer look at the service, e.g. BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const SERVICE_NODE_ARGS = (process.env.BENCH_SERVICE_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "");
const CHECKED_BODIES = 20;

function shuffled<T>(items: readonly T[]): T[] {
  const random = prng(7);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** Starts a server, waits for /health, warms up, then measures with RSS sampled throughout. */
async function measure(
  label: string,
  start: (port: number) => Pinned,
  pathsFile: string,
  beforeLoad: (baseUrl: string) => Promise<void> = async () => {},
  readCache?: (baseUrl: string) => Promise<CacheUse>,
): Promise<Measured> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const server = start(port);
  try {
    await waitForHttp(`${baseUrl}/health`, server);
    await beforeLoad(baseUrl);
    console.error(`  ${label}: warm-up ${WARMUP_SECONDS} s, then ${WRK.durationSeconds} s measured`);
    const scriptArgs = [pathsFile, String(WRK.threads)];
    const loadAverage = loadavg()[0] ?? Number.NaN;
    const rss = sampleRss(server.pid);
    let wrk: WrkResult;
    let memory: ReturnType<typeof rss.stop>;
    let before: CacheUse | undefined;
    try {
      await runWrk({ ...WRK, durationSeconds: WARMUP_SECONDS }, baseUrl, LUA, scriptArgs);
      before = await readCache?.(baseUrl);
      wrk = await runWrk(WRK, baseUrl, LUA, scriptArgs);
    } finally {
      memory = rss.stop();
    }
    const after = await readCache?.(baseUrl);
    const cache =
      after === undefined || before === undefined
        ? undefined
        : {
            ...after,
            hits: after.hits - before.hits,
            misses: after.misses - before.misses,
            evictions: after.evictions - before.evictions,
          };
    return { wrk, peakRssMB: memory.peakMB, loadAverage, ...(cache === undefined ? {} : { cache }) };
  } finally {
    await stop(server);
  }
}

/** The service's cache statistics, through the admin API (one login per read). */
async function readServiceCache(baseUrl: string): Promise<CacheUse> {
  const signal = AbortSignal.timeout(10_000);
  const login = await fetch(`${baseUrl}/api/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password: ADMIN_PASSWORD }),
    signal,
  });
  if (!login.ok) throw new Error(`admin login for the cache statistics: ${login.status}`);
  const { access_token: token } = (await login.json()) as { access_token: string };
  const res = await fetch(`${baseUrl}/api/subscriptions/cache`, {
    headers: { authorization: `Bearer ${token}` },
    signal,
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
    evictions: field("evictions"),
  };
}

function startService(dataDir: string, databaseUrl: string | undefined) {
  return (port: number) =>
    startPinned(process.execPath, [...SERVICE_NODE_ARGS, ...START_ARGS, "serve"], {
      cpu: SERVER_CPU,
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        HOST: "127.0.0.1",
        PORT: String(port),
        DATA_DIR: dataDir,
        ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
        LOG_LEVEL: "warn",
        PORTCULLIS_ADMIN_PASSWORD: ADMIN_PASSWORD,
        PORTCULLIS_SECRET_KEY: SECRET_KEY,
      },
    });
}

function startCeiling(sample: Sample) {
  return (port: number) =>
    startPinned(process.execPath, ["--import", "tsx", join(HERE, "ceiling-server.ts")], {
      cpu: SERVER_CPU,
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOST: "127.0.0.1",
        PORT: String(port),
        CEILING_BODY_BYTES: String(sample.bodyBytes),
        CEILING_HEADERS: JSON.stringify(sample.headers),
      },
    });
}

async function run(dialect: Dialect): Promise<DialectResult> {
  console.error(`${dialect}:`);
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-bench-sub-"));
  let scratch: ScratchDatabase | undefined;
  try {
    if (dialect === "postgres") scratch = await createScratchDatabase("portcullis_bench_sub");
    const config = loadConfig({
      DATA_DIR: dataDir,
      DATABASE_URL: scratch?.url,
      PORTCULLIS_SECRET_KEY: SECRET_KEY,
      PORTCULLIS_CORE_TIMEOUT_MS: "1000",
    });
    const deps = await createDeps(config, { logger: pino({ level: "silent" }) });
    let seeded: Awaited<ReturnType<typeof seed>>;
    let databaseVersion: string;
    try {
      seeded = await seed(deps, USERS, interrupted);
      const version =
        dialect === "postgres"
          ? sql<{ v: string }>`SELECT current_setting('server_version') AS v`
          : sql<{ v: string }>`SELECT sqlite_version() AS v`;
      const { rows } = await version.execute(deps.database.db);
      databaseVersion = `${dialect === "postgres" ? "PostgreSQL" : "SQLite"} ${rows[0]?.v ?? "?"}`;
    } finally {
      await deps.close();
    }
    console.error(`  seeded ${USERS.toLocaleString("en")} users in ${seeded.seconds.toFixed(1)} s`);
    const paths = shuffled(seeded.userIds).map((id) => `/sub/${id}`);
    const pathsFile = join(dataDir, "paths.txt");
    writeFileSync(pathsFile, `${paths.join("\n")}\n`);
    const protocols = seeded.inbounds.map((inbound) => inbound.protocol);
    let sample: Sample | undefined;
    const sub = await measure(
      "GET /sub/{user_id}",
      startService(dataDir, scratch?.url),
      pathsFile,
      async (url) => {
        sample = await checkSubscriptions(url, paths.slice(0, CHECKED_BODIES), protocols);
      },
      readServiceCache,
    );
    if (sample === undefined) throw new Error("no subscription body was checked");
    const ceiling = await measure("ceiling", startCeiling(sample), pathsFile);
    return {
      dialect,
      databaseVersion,
      seedSeconds: seeded.seconds,
      bodyBytes: sample.bodyBytes,
      sub,
      ceiling,
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await scratch?.drop();
  }
}

async function main(): Promise<number> {
  const startedAt = new Date().toISOString();
  const built = spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs")], { stdio: "inherit" });
  if (built.status !== 0) throw new Error("npm run build failed");
  const machine = describeMachine([describeCode(ROOT)]);
  const results: DialectResult[] = [];
  for (const dialect of DIALECTS) results.push(await run(dialect));
  const args = process.argv.slice(2);
  const report = renderReport(
    {
      command: `npm run bench:sub${args.length > 0 ? ` -- ${args.join(" ")}` : ""}`,
      startedAt,
      machine,
      users: USERS,
      linksPerUser: LINKS_PER_USER,
      wrk: WRK,
      warmupSeconds: WARMUP_SECONDS,
    },
    results,
  );
  console.log(report);
  if (values.write !== undefined) writeResults(values.write, report);
  const failed = results.filter((r) => totalErrors(r.sub.wrk) + totalErrors(r.ceiling.wrk) > 0);
  if (failed.length === 0) return 0;
  console.error(`requests errored (${failed.map((r) => r.dialect).join(", ")}): see the error columns`);
  return 1;
}

process.exitCode = await main().catch((error: unknown) => {
  if (interrupted.aborted) return 130;
  console.error(error);
  return 1;
});
