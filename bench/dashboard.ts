// `npm run bench:dashboard [-- --users N --loads K --searches S --pages P]`: the dashboard's users page
// in Debian's Chromium against `portcullis serve` (the dist bundle `npm start` runs, SQLite) seeded
// with N users (default 1,000,000). Every time is taken by the browser's performance clock:
// - interactive: navigation start → the first page of rows is on screen and the search box takes
//   input, each load in a fresh browser context (cold HTTP cache);
// - search: the last keystroke → the rows of that query are on screen (typed at 60 ms per key,
//   debounce included);
// - next page: the click on "next page" → that page's rows are on screen.
// The browser half is web/bench/measure.ts (type-checked with the DOM's types, which the service's
// own code must not see); this half seeds, starts the service, runs it and judges the numbers.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pino from "pino";
import { loadConfig } from "../src/config/config.ts";
import { createDeps } from "../src/deps.ts";
import { waitFor } from "../test/support/poll.ts";
import { freePort } from "../test/support/ports.ts";
import { prng } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string", default: "1000000" },
    loads: { type: "string", default: "10" },
    searches: { type: "string", default: "50" },
    pages: { type: "string", default: "50" },
  },
});
const USERS = Number(values.users);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PASSWORD = "bench-password";
const GOALS = { interactiveMs: 1500, searchP95Ms: 300, nextPageP95Ms: 200 };

const SYLLABLES = [..."bcdfghjklmnprstvwxyzq"].flatMap((c) => [..."aeiouy"].map((v) => c + v));
const random = prng(7);
const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)] as T;
const word = (n: number) => Array.from({ length: n }, () => pick(SYLLABLES)).join("");
const capital = (s: string) => (s[0]?.toUpperCase() ?? "") + s.slice(1);

async function seed(dataDir: string): Promise<string[]> {
  const config = loadConfig({ DATA_DIR: dataDir, PORTCULLIS_ADMIN_PASSWORD: PASSWORD });
  const deps = await createDeps(config, { logger: pino({ level: "silent" }) });
  const names: string[] = [];
  const started = Date.now();
  try {
    await deps.services.auth.ensureFirstAdmin("admin", PASSWORD);
    for (let offset = 0; offset < USERS; offset += 10_000) {
      await deps.database.db.transaction().execute(async (trx) => {
        for (let b = offset; b < Math.min(USERS, offset + 10_000); b += 1000) {
          const rows = Array.from({ length: Math.min(1000, USERS - b) }, (_, k) => {
            const at = new Date(Date.UTC(2026, 0, 1) + (b + k) * 1000).toISOString();
            const name = `${capital(word(2 + Math.floor(random() * 2)))} ${capital(word(2 + Math.floor(random() * 2)))}`;
            if (names.length < 10_000) names.push(name);
            return {
              id: randomUUID(),
              name,
              comment: null,
              telegram_id: 100_000_000 + b + k,
              created_at: at,
              updated_at: at,
            };
          });
          await trx.insertInto("users").values(rows).execute();
        }
      });
    }
  } finally {
    await deps.close();
  }
  console.error(
    `seeded ${USERS.toLocaleString("en")} users in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return names;
}

async function serve(dataDir: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(ROOT, "dist/portcullis.mjs"), "serve"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
    env: {
      PATH: process.env.PATH ?? "",
      HOST: "127.0.0.1",
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
    },
  });
  let log = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-100_000);
  });
  const healthy = () =>
    fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.ok,
      () => false,
    );
  try {
    // Measure the steady state: after the subscription cache's warm-up walk over every user is done.
    // jobs/subscription-cache.ts logs "subscriptions in memory" when the walk is complete ("partly in
    // memory" when serve's bounded warm-up before listening stopped early and the job goes on).
    const warmed = () => log.includes('"msg":"subscriptions in memory"');
    await waitFor(warmed, {
      timeoutMs: 600_000,
      intervalMs: 500,
      what: "every user's subscription in memory",
    });
    await waitFor(healthy, { timeoutMs: 60_000, what: "portcullis serve" });
    return child;
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
}

const percentile = (xs: number[], p: number) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

function report(what: string, xs: number[], goalMs: number, p: number): boolean {
  const value = percentile(xs, p);
  const at = (q: number) => `${percentile(xs, q).toFixed(0)} ms`;
  console.log(
    `${what}: n=${xs.length} p50 ${at(50)}, p95 ${at(95)}, max ${at(100)} — goal p${p} < ${goalMs} ms: ${value < goalMs ? "met" : "NOT met"}`,
  );
  return value < goalMs;
}

async function main(): Promise<number> {
  const built = spawnSync("npm", ["run", "-s", "build"], { cwd: ROOT, stdio: "inherit" });
  if (built.status !== 0) return 1;
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-bench-dashboard-"));
  let service: ChildProcess | undefined;
  try {
    const names = await seed(dataDir);
    const namesFile = join(dataDir, "names.txt");
    writeFileSync(namesFile, names.join("\n"));
    const port = await freePort();
    service = await serve(dataDir, port);
    const base = `http://127.0.0.1:${port}`;
    const login = await fetch(`${base}/api/auth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "admin", password: PASSWORD }),
    });
    const token = ((await login.json()) as { access_token: string }).access_token;
    const measured = spawnSync(
      process.execPath,
      [
        "--import",
        "tsx",
        join(ROOT, "web/bench/measure.ts"),
        base,
        token,
        namesFile,
        values.loads,
        values.searches,
        values.pages,
      ].map(String),
      { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
    );
    if (measured.status !== 0) return 1;
    const result = JSON.parse(measured.stdout.trim().split("\n").pop() ?? "{}") as {
      interactive: number[];
      searches: number[];
      searchParts: { wait: number; request: number; render: number }[];
      nextPages: number[];
      chromium: string;
    };
    console.log(`\ndashboard at ${USERS.toLocaleString("en")} users (SQLite, Chromium ${result.chromium}):`);
    const met = [
      report(
        "users page interactive after navigation (cold cache)",
        result.interactive,
        GOALS.interactiveMs,
        100,
      ),
      report("search result after the last keystroke", result.searches, GOALS.searchP95Ms, 95),
      report("next page of the table", result.nextPages, GOALS.nextPageP95Ms, 95),
    ];
    const parts = result.searchParts;
    const part = (key: "wait" | "request" | "render") => {
      const xs = parts.map((p) => p[key]);
      return `${key} p50 ${percentile(xs, 50).toFixed(0)} / p95 ${percentile(xs, 95).toFixed(0)} ms`;
    };
    console.log(
      `  search, where the time went (n=${parts.length}): ${part("wait")}, ${part("request")}, ${part("render")}`,
    );
    const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
    console.log(`  load average at the end (2 cores): ${load}`);
    return met.every(Boolean) ? 0 : 1;
  } finally {
    service?.kill("SIGTERM");
    rmSync(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
