// `npm run bench:sub-ab -- --b /tmp/before.mjs [--a /tmp/after.mjs --users N --rounds R
// --duration S --warmup S --connections C --runs K --a-node-args=… --b-node-args=…]`: two builds of the service measured at the same time,
// for telling a change of 1-2 % on a machine whose speed drifts by far more between runs taken one
// after the other. Seeds one SQLite database of N users (default 20,000) with 5 grants each and gives
// each build its own copy; both services run on CPU 0, each loaded by its own wrk on CPU 1 (started
// together, the same rotating paths), and each server's CPU time per request is read from
// /proc/<pid>/stat over the same window. A change of the host's speed hits both alike, so their
// ratio (B over A) holds where each one's own figure does not. Prints every round, the median,
// mean and standard deviation of the ratio, and each side's peak RSS under the paired load per run.
// Two processes of one build differ by a few per cent (layout luck; at 1,000,000 users by up to 16 %
// for a whole run, docs/benchmarks/HISTORY.md, session 27), which no number of rounds averages out: --runs K
// starts both services afresh K times (B first in even runs) and gives each run's median too.
// Without --b it measures A against itself: the method's own spread. What it does not measure: a
// server alone on its core (bench:sub does that); taking turns on one core, each server starts its
// turn with the other's cache lines, so compare builds of the same server here, not /sub against the
// references. Without --a, `npm run build` makes A; the build empties dist/, so keep the other bundle
// elsewhere (e.g. cp dist/portcullis.mjs /tmp/before.mjs).
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort } from "../../test/support/ports.ts";
import { cpuWindow } from "../lib/cpu.ts";
import { describeCode, describeMachine } from "../lib/machine.ts";
import { interrupted, type Pinned, stop, waitForHttp } from "../lib/processes.ts";
import { readPeakRssMB, sampleRss } from "../lib/rss.ts";
import { median, shuffled, standardDeviation } from "../lib/stats.ts";
import { runWrk, totalErrors, type WrkResult, type WrkSettings } from "../lib/wrk.ts";
import type { SeededUser } from "./seed.ts";
import { adminToken, builtBundle, seedDatabase, startService, waitUntilIndexed } from "./service.ts";
import { checkSubscriptions, pathOf } from "./validate.ts";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = resolve(HERE, "../..");
const LUA = join(HERE, "rotate.lua");
const SERVER_CPU = 0;
/** Users whose answers both builds must give exactly before the load. */
const CHECKED = 200;
/** Below this share of CPU 0 over a round, the two servers waited for their load generators. */
const SATURATED = 0.95;

const { values } = parseArgs({
  options: {
    a: { type: "string" },
    b: { type: "string" },
    users: { type: "string", default: "20000" },
    rounds: { type: "string", default: "10" },
    duration: { type: "string", default: "4" },
    warmup: { type: "string", default: "4" },
    connections: { type: "string", default: "64" },
    runs: { type: "string", default: "1" },
    "a-node-args": { type: "string", default: "" },
    "b-node-args": { type: "string", default: "" },
  },
});

function positive(name: string, text: string): number {
  const value = Number(text);
  if (Number.isInteger(value) && value > 0) return value;
  console.error(`--${name} must be a positive integer, got "${text}"`);
  process.exit(2);
}
const USERS = positive("users", values.users);
const ROUNDS = positive("rounds", values.rounds);
const RUNS = positive("runs", values.runs);
const WRK: WrkSettings = {
  threads: 1,
  connections: positive("connections", values.connections),
  durationSeconds: positive("duration", values.duration),
  timeoutSeconds: 10,
  cpu: 1,
};
const WARMUP_SECONDS = positive("warmup", values.warmup);
/** Node.js options before npm start's own, per side (e.g. a flag measured against its absence). */
const NODE_ARGS = {
  A: values["a-node-args"].split(" ").filter((arg) => arg !== ""),
  B: values["b-node-args"].split(" ").filter((arg) => arg !== ""),
};

/** A bundle file, as an absolute path; exits 2 otherwise. */
function bundleOf(path: string): string {
  const absolute = resolve(path);
  if (!existsSync(absolute)) {
    console.error(`${path}: no such bundle`);
    process.exit(2);
  }
  return absolute;
}

type Side = { name: "A" | "B"; bundle: string; server: Pinned; baseUrl: string };

async function startSide(name: Side["name"], bundle: string, dataDir: string): Promise<Side> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const start = startService({
    root: ROOT,
    bundle,
    cpu: SERVER_CPU,
    dataDir,
    databaseUrl: undefined,
    maxAgeMs: undefined,
    nodeArgs: NODE_ARGS[name],
  });
  const server = start(port);
  try {
    await waitForHttp(`${baseUrl}/health`, server, 60_000);
    await waitUntilIndexed(baseUrl, await adminToken(baseUrl), USERS, 20 * 60_000);
  } catch (error) {
    await stop(server);
    throw error;
  }
  return { name, bundle, server, baseUrl };
}

type Round = {
  costA: number;
  costB: number;
  cpuUse: number;
  /** The share of the round the hypervisor ran something else on the server's CPU (/proc/stat steal). */
  steal: number;
  wrk: [WrkResult, WrkResult];
};

/** CPU `cpu`'s steal and total time since boot, in ticks (the cpuN line of /proc/stat). */
function readCpuLine(cpu: number): { steal: number; total: number } {
  const line = readFileSync("/proc/stat", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`cpu${cpu} `));
  const fields = (line ?? "").trim().split(/\s+/).slice(1, 9).map(Number);
  if (fields.length < 8 || fields.some((v) => !Number.isFinite(v)))
    throw new Error(`no cpu${cpu} line in /proc/stat`);
  return { steal: fields[7] as number, total: fields.reduce((sum, v) => sum + v, 0) };
}

/**
 * Both loads at once; each server's CPU seconds per request over the same window. Odd rounds start
 * B's load first, so that neither build is always the one that starts (or ends) its turn first.
 */
async function pairedRound(a: Side, b: Side, pathsFile: string, bFirst: boolean): Promise<Round> {
  const args = [pathsFile, "1"];
  const stat = readCpuLine(SERVER_CPU);
  const windowA = cpuWindow(a.server.pid);
  const windowB = cpuWindow(b.server.pid);
  const load = (side: Side) => runWrk(WRK, side.baseUrl, LUA, args);
  const wrk: [WrkResult, WrkResult] = bFirst
    ? await Promise.all([load(b), load(a)]).then(([wb, wa]) => [wa, wb])
    : await Promise.all([load(a), load(b)]);
  const cpuA = windowA.stop();
  const cpuB = windowB.stop();
  const after = readCpuLine(SERVER_CPU);
  return {
    costA: cpuA.cpuSeconds / wrk[0].requests,
    costB: cpuB.cpuSeconds / wrk[1].requests,
    cpuUse: (cpuA.cpuSeconds + cpuB.cpuSeconds) / Math.max(cpuA.wallSeconds, cpuB.wallSeconds),
    steal: (after.steal - stat.steal) / Math.max(1, after.total - stat.total),
    wrk,
  };
}

async function main(): Promise<number> {
  const givenA = values.a === undefined ? undefined : bundleOf(values.a);
  const givenB = values.b === undefined ? undefined : bundleOf(values.b);
  if (givenA === undefined) {
    const built = spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs")], { stdio: "inherit" });
    if (built.status !== 0) throw new Error("npm run build failed");
  }
  // Both bundles run from a folder inside the repository, so that their packages resolve from its
  // node_modules wherever the files came from (the build empties dist/).
  const copies = mkdtempSync(join(ROOT, ".bench-ab-"));
  const bundleA = join(copies, "a.mjs");
  cpSync(givenA ?? builtBundle(ROOT), bundleA);
  const bundleB = join(copies, "b.mjs");
  cpSync(givenB ?? bundleA, bundleB);
  const withArgs = (name: Side["name"]) =>
    NODE_ARGS[name].length === 0 ? "" : ` with ${NODE_ARGS[name].join(" ")}`;
  const names = {
    A: `${values.a ?? "the working tree's build"}${withArgs("A")}`,
    B: `${values.b ?? values.a ?? "the working tree's build"}${withArgs("B")}`,
  };
  const dirA = mkdtempSync(join(tmpdir(), "portcullis-bench-ab-a-"));
  const dirB = mkdtempSync(join(tmpdir(), "portcullis-bench-ab-b-"));
  const sides: Side[] = [];
  try {
    const { seeded } = await seedDatabase("sqlite", dirA, undefined, USERS, (index) => index < CHECKED);
    cpSync(dirA, dirB, { recursive: true });
    const pathsFile = join(dirA, "paths.txt");
    writeFileSync(
      pathsFile,
      `${shuffled(seeded.userIds, 7)
        .map((id) => pathOf(id, "base64"))
        .join("\n")}\n`,
    );
    const checked = new Map<string, SeededUser>(
      seeded.userIds.slice(0, CHECKED).map((id) => [id, seeded.kept.get(id) as SeededUser]),
    );
    const runs: Round[][] = [];
    const memory: { a: number; b: number }[] = [];
    for (let run = 0; run < RUNS; run++) {
      if (RUNS > 1) console.error(`run ${run + 1} of ${RUNS}: both services started afresh`);
      // Later runs start B first: neither build always gets the first process's luck.
      const order = run % 2 === 0 ? (["A", "B"] as const) : (["B", "A"] as const);
      for (const name of order) {
        sides.push(await startSide(name, name === "A" ? bundleA : bundleB, name === "A" ? dirA : dirB));
      }
      sides.sort((x, y) => x.name.localeCompare(y.name));
      for (const side of sides) {
        await checkSubscriptions(side.baseUrl, checked, seeded.inbounds);
        console.error(
          `  ${side.name}: ${names[side.name]}, ${CHECKED} answers checked; warm-up ${WARMUP_SECONDS} s`,
        );
        await runWrk({ ...WRK, durationSeconds: WARMUP_SECONDS }, side.baseUrl, LUA, [pathsFile, "1"]);
      }
      const [a, b] = sides as [Side, Side];
      // Resident memory under the paired load, each side's peak (a flag or build that costs memory
      // shows here as in bench:sub's RSS row, measured on the same host at the same time).
      const rssSamplers = [sampleRss(a.server.pid), sampleRss(b.server.pid)] as const;
      const rounds: Round[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        interrupted.throwIfAborted();
        const round = await pairedRound(a, b, pathsFile, i % 2 === 1);
        rounds.push(round);
        const errors = round.wrk.map(totalErrors);
        console.error(
          `  round ${i + 1}: A ${(round.costA * 1e6).toFixed(1)} µs/request (${round.wrk[0].requests}), B ${(round.costB * 1e6).toFixed(1)} (${round.wrk[1].requests}), B/A ${(round.costB / round.costA).toFixed(3)}, CPU ${SERVER_CPU} use ${round.cpuUse.toFixed(3)}${round.cpuUse < SATURATED ? " (not saturated: not counted)" : ""}, steal ${(round.steal * 100).toFixed(1)} %, errors ${errors.join("/")}`,
        );
      }
      const [rssA, rssB] = rssSamplers.map((sampler) => sampler.stop().peakMB) as [number, number];
      const [hwmA, hwmB] = [a, b].map((side) => readPeakRssMB(side.server.pid) ?? Number.NaN) as [
        number,
        number,
      ];
      memory.push({ a: rssA, b: rssB });
      console.error(
        `  RSS MB, peak under load (since start): A ${rssA.toFixed(0)} (${hwmA.toFixed(0)}), B ${rssB.toFixed(0)} (${hwmB.toFixed(0)})`,
      );
      runs.push(rounds);
      while (sides.length > 0) await stop((sides.pop() as Side).server);
    }
    // A round where CPU 0 was not busy with the two servers (their loads, or the hypervisor, held
    // them back) is shown but not counted: it is not a measurement of the servers.
    const countedRuns = runs.map((rounds) => rounds.filter((r) => r.cpuUse >= SATURATED));
    const counted = countedRuns.flat();
    const ratiosOf = (rounds: Round[]) => rounds.map((r) => r.costB / r.costA);
    const ratios = ratiosOf(counted);
    const rounds = runs.flat();
    const summary =
      ratios.length === 0
        ? "no round saturated CPU 0: no result"
        : `B/A CPU per request over ${ratios.length} saturated round(s) of ${rounds.length}: median ${median(ratios).toFixed(3)}, mean ${(ratios.reduce((sum, v) => sum + v, 0) / ratios.length).toFixed(3)}, standard deviation ${standardDeviation(ratios).toFixed(3)} (${ratios.map((r) => r.toFixed(3)).join(", ")})`;
    // Each run is a new pair of processes: their medians' spread is the per-process luck that one
    // run cannot average out.
    const perRun =
      RUNS === 1
        ? []
        : [
            `medians of B/A per run (pairs of processes): ${countedRuns
              .map((r) => (r.length === 0 ? "none saturated" : median(ratiosOf(r)).toFixed(3)))
              .join(", ")}`,
          ];
    console.log(
      [
        `npm run bench:sub-ab -- ${process.argv.slice(2).join(" ")}`,
        ...describeMachine([describeCode(ROOT)]),
        `A ${names.A}, B ${names.B}; ${USERS.toLocaleString("en")} users, ${RUNS} run(s) of ${ROUNDS} paired rounds of ${WRK.durationSeconds} s, ${WRK.connections} connections each`,
        summary,
        ...perRun,
        ...(counted.length === 0
          ? []
          : [
              `median µs/request in those rounds: A ${(median(counted.map((r) => r.costA)) * 1e6).toFixed(1)}, B ${(median(counted.map((r) => r.costB)) * 1e6).toFixed(1)}`,
            ]),
        `RSS MB, peak under load per run: A ${memory.map((m) => m.a.toFixed(0)).join(", ")}; B ${memory.map((m) => m.b.toFixed(0)).join(", ")}; B − A ${memory.map((m) => (m.b - m.a).toFixed(0)).join(", ")}`,
      ].join("\n"),
    );
    const failed = rounds.some((r) => r.wrk.some((w) => totalErrors(w) > 0));
    if (failed) console.error("requests errored: see the rounds");
    return failed ? 1 : 0;
  } finally {
    for (const side of sides) await stop(side.server);
    rmSync(dirA, { recursive: true, force: true });
    rmSync(dirB, { recursive: true, force: true });
    rmSync(copies, { recursive: true, force: true });
  }
}

process.exitCode = await main().catch((error: unknown) => {
  if (interrupted.aborted) return 130;
  console.error(error);
  return 1;
});
