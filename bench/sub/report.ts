// The subscription benchmark's report: one markdown block (settings, machine, a table per dialect
// with the three targets, the cost and throughput ratios, the acceptance checks of the issue) printed
// to stdout and, with --write, put between the markers for its user count in docs/benchmarks/sub.md, so
// the numbers there are always a whole run's, never hand-copied.
import { readFileSync, writeFileSync } from "node:fs";
import { fmt, median } from "../lib/stats.ts";
import { socketErrors, totalErrors, type WrkResult, type WrkSettings } from "../lib/wrk.ts";

export type Dialect = "sqlite" | "postgres";
export type TargetName = "sub" | "fastify" | "limit";

/** One measured wrk run against one server. */
export type Round = {
  wrk: WrkResult;
  /** The server process's CPU time (utime + stime) and the wall time around the measured wrk run. */
  cpuSeconds: number;
  wallSeconds: number;
  /** The machine's 1-minute load average when the run began (noise indicator). */
  loadAverage: number;
  /** The service's index statistics over the run (sub only). */
  cache?: CacheUse;
};
export type Measured = {
  rounds: Round[];
  /** Peak VmRSS sampled from the warm-up to the end of the last round. */
  peakRssMB: number;
  /** VmHWM at the end: the peak since the process started (the index load included). */
  highWaterRssMB: number;
};
/** The service's GET /api/subscriptions/cache after the run, and its hits/misses during the measurement. */
export type CacheUse = {
  entries: number;
  bytes: number;
  budgetBytes: number;
  layouts: number;
  hits: number;
  misses: number;
};
export type DialectResult = {
  dialect: Dialect;
  databaseVersion: string;
  seedSeconds: number;
  /** The database was a copy of one seeded by an earlier run (--data), not seeded by this one. */
  seedReused: boolean;
  /** From the service's start until every user was in its memory (GET /api/subscriptions/cache). */
  readySeconds: number;
  bodyBytes: number;
  /** Answers compared with the expected bytes, before and after the measurement. */
  checked: { before: number; after: number };
  targets: Record<TargetName, Measured>;
};
export type RunInfo = {
  command: string;
  startedAt: string;
  machine: string[];
  users: number;
  linksPerUser: number;
  wrk: WrkSettings;
  warmupSeconds: number;
  rounds: number;
  serverCpu: number;
  /** PORTCULLIS_SUB_CACHE_MAX_AGE_MS given to the service (undefined: its default, 300000). */
  maxAgeMs: number | undefined;
  /** Node.js options of the service (before its bundle) and of the fastify and limit targets. */
  serviceNodeArgs: readonly string[];
  sampleNodeArgs: readonly string[];
};

/** CPU use of one core at or above this during the measurement: the server was the bottleneck. */
export const SATURATED = 0.95;

const LABELS: Record<TargetName, string> = {
  sub: "sub: GET /sub/{user_id} (portcullis serve)",
  fastify: "fastify: bare Fastify, same bytes",
  limit: "limit: raw node:http, same bytes",
};

/** The acceptance, per user count; reported, not enforced by the exit status. */
const ACCEPTANCE: Record<number, Partial<Record<Dialect, Targets>>> = {
  100000: {
    sqlite: { costVsFastify: 1.0, costVsLimit: 0.8, p99Ms: 10, rssMB: 250 },
    postgres: { costVsFastify: 0.9 },
  },
  1000000: { sqlite: { costVsFastify: 0.9, rssMB: 600 } },
};
type Targets = { costVsFastify: number; costVsLimit?: number; p99Ms?: number; rssMB?: number };

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

const requests = (m: Measured) => sum(m.rounds.map((r) => r.wrk.requests));
const roundCpuUs = (r: Round) => (r.cpuSeconds / Math.max(1, r.wrk.requests)) * 1e6;
const roundUse = (r: Round) => r.cpuSeconds / r.wallSeconds;
export const requestsPerSecond = (m: Measured) => requests(m) / sum(m.rounds.map((r) => r.wrk.seconds));
export const cpuPerRequestUs = (m: Measured) =>
  (sum(m.rounds.map((r) => r.cpuSeconds)) / Math.max(1, requests(m))) * 1e6;
/** The lowest CPU use of any round: saturated only if every round was. */
export const cpuUse = (m: Measured) => Math.min(...m.rounds.map(roundUse));
export const isSaturated = (m: Measured) => cpuUse(m) >= SATURATED;
/** CPU use as shown: two decimals, or three (cut, not rounded) below the threshold, so 0.9496 never reads "0.95 < 0.95". */
export const formatUse = (use: number) =>
  use >= SATURATED ? use.toFixed(2) : (Math.floor(use * 1000) / 1000).toFixed(3);
const errorsOf = (m: Measured) => ({
  status: sum(m.rounds.map((r) => r.wrk.errors.status)),
  socket: sum(m.rounds.map((r) => socketErrors(r.wrk))),
  total: sum(m.rounds.map((r) => totalErrors(r.wrk))),
});
/** Their CPU per request over /sub's, per round (the rounds took turns, so each pair saw the same machine). */
export const costRatios = (r: DialectResult, other: TargetName) =>
  r.targets.sub.rounds.map((round, i) => {
    const theirs = r.targets[other].rounds[i];
    return theirs === undefined ? Number.NaN : roundCpuUs(theirs) / roundCpuUs(round);
  });
/** The median of the rounds' cost ratios: above 1, /sub costs less than they do. */
export const costRatio = (r: DialectResult, other: TargetName) => median(costRatios(r, other));
export const throughputRatio = (r: DialectResult, other: TargetName) =>
  requestsPerSecond(r.targets.sub) / requestsPerSecond(r.targets[other]);
/** What the RSS targets are about: the service serving (its start's peak is reported beside it). */
const serviceRssMB = (r: DialectResult) => r.targets.sub.peakRssMB;
const p99Of = (m: Measured) => Math.max(...m.rounds.map((r) => r.wrk.latency_ms.p99));
const p50Of = (m: Measured) => median(m.rounds.map((r) => r.wrk.latency_ms.p50));
const loadOf = (m: Measured) => Math.max(...m.rounds.map((r) => r.loadAverage));

const int = (n: number) => Math.round(n).toLocaleString("en");

function row(name: TargetName, m: Measured): string {
  const use = `${formatUse(cpuUse(m))}${isSaturated(m) ? " saturated" : " **not saturated**"}`;
  const errors = errorsOf(m);
  const rss = name === "sub" ? `${int(m.peakRssMB)} (${int(m.highWaterRssMB)})` : int(m.peakRssMB);
  return `| ${LABELS[name]} | ${int(requestsPerSecond(m))} | ${cpuPerRequestUs(m).toFixed(1)} | ${use} | ${fmt(p50Of(m))} | ${fmt(p99Of(m))} | ${int(requests(m))} | ${errors.status} / ${errors.socket} | ${rss} | ${loadOf(m).toFixed(2)} |`;
}

function mark(ok: boolean): string {
  return ok ? "pass" : "**fail**";
}

function acceptance(info: RunInfo, results: DialectResult[]): string[] {
  const byDialect = ACCEPTANCE[info.users];
  if (byDialect === undefined) {
    return [
      `No targets are stated for ${int(info.users)} users (the issue's are for 100,000 and 1,000,000); this run checks that every part works, not how fast.`,
    ];
  }
  const lines = ["| target | measured | |", "|---|---|---|"];
  for (const result of results) {
    const targets = byDialect[result.dialect];
    if (targets === undefined) continue;
    const d = result.dialect;
    if (!isSaturated(result.targets.sub)) {
      lines.push(
        `| ${d}: the /sub server saturated | ${formatUse(cpuUse(result.targets.sub))} | **bound by the load generator: not a result** |`,
      );
      continue;
    }
    const vsFastify = costRatio(result, "fastify");
    lines.push(
      `| ${d}: sub/fastify cost ≥ ${targets.costVsFastify} | ${vsFastify.toFixed(2)} | ${mark(vsFastify >= targets.costVsFastify)} |`,
    );
    if (targets.costVsLimit !== undefined) {
      const vsLimit = costRatio(result, "limit");
      lines.push(
        `| ${d}: sub/limit cost ≥ ${targets.costVsLimit} | ${vsLimit.toFixed(2)} | ${mark(vsLimit >= targets.costVsLimit)} |`,
      );
    }
    if (targets.p99Ms !== undefined) {
      const p99 = p99Of(result.targets.sub);
      const at = info.wrk.connections === 64 ? "" : ` (measured at ${info.wrk.connections})`;
      lines.push(
        `| ${d}: p99 ≤ ${targets.p99Ms} ms at 64 connections${at} | ${fmt(p99)} ms | ${mark(p99 <= targets.p99Ms && info.wrk.connections === 64)} |`,
      );
    }
    const errors = errorsOf(result.targets.sub).total;
    lines.push(`| ${d}: zero errors | ${errors} | ${mark(errors === 0)} |`);
    if (targets.rssMB !== undefined) {
      const rss = serviceRssMB(result);
      lines.push(
        `| ${d}: service RSS ≤ ${targets.rssMB} MB (peak under load; since its start: ${int(result.targets.sub.highWaterRssMB)} MB) | ${int(rss)} MB | ${mark(rss <= targets.rssMB)} |`,
      );
    }
  }
  return lines;
}

function cacheLine(m: Measured): string[] {
  const caches = m.rounds.flatMap((r) => (r.cache === undefined ? [] : [r.cache]));
  const last = caches.at(-1);
  if (last === undefined) return [];
  const hits = sum(caches.map((c) => c.hits));
  const misses = sum(caches.map((c) => c.misses));
  const fromMemory = hits + misses === 0 ? 0 : (100 * hits) / (hits + misses);
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  return [
    `Subscriptions in memory (GET /api/subscriptions/cache): ${int(last.entries)} users in ${mb(last.bytes)} of ${mb(last.budgetBytes)} MiB, ${last.layouts} layout(s); during the measured runs ${int(hits)} answered from memory, ${int(misses)} from the database (${fromMemory.toFixed(1)} % from memory).`,
    "",
  ];
}

function dialectBlock(result: DialectResult): string[] {
  const { sub } = result.targets;
  const out = [
    `**${result.dialect}** (${result.databaseVersion}; ${result.seedReused ? "a copy of a database an earlier run seeded in" : "seeded in"} ${result.seedSeconds.toFixed(1)} s; every user in memory ${result.readySeconds.toFixed(1)} s after the start; body ${result.bodyBytes} bytes; ${int(result.checked.before)} answers checked byte for byte before the load and ${int(result.checked.after)} after it)`,
    "",
    "| target | requests/s | server CPU µs/request | server CPU use (lowest round) | p50 ms (median round) | p99 ms (worst round) | requests | errors (status / socket) | RSS MB, peak under load (since start) | load avg (highest at a round's start) |",
    "|---|---|---|---|---|---|---|---|---|---|",
    ...(["sub", "fastify", "limit"] as const).map((name) => row(name, result.targets[name])),
    "",
    "| ratio | cost: their CPU per request over /sub's (median of rounds; each round) | throughput: /sub's requests/s over theirs |",
    "|---|---|---|",
    ...(["fastify", "limit"] as const).map(
      (other) =>
        `| sub/${other} | **${costRatio(result, other).toFixed(2)}** (${costRatios(result, other)
          .map((ratio) => ratio.toFixed(2))
          .join(", ")}) | ${throughputRatio(result, other).toFixed(2)} |`,
    ),
    "",
  ];
  if (!isSaturated(sub)) {
    out.push(
      `The /sub server was not saturated (CPU use ${formatUse(cpuUse(sub))} < ${SATURATED}): this run is bound by the load generator, not a result.`,
      "",
    );
  }
  return [...out, ...cacheLine(sub)];
}

export function renderReport(info: RunInfo, results: DialectResult[]): string {
  const { wrk } = info;
  const out = [
    `Run of ${info.startedAt}: \`${info.command}\``,
    "",
    ...info.machine.map((line) => `- ${line}`),
    `- data: ${int(info.users)} users × ${info.linksPerUser} grants (2 servers, 5 inbounds: VLESS REALITY, VLESS WS+TLS, Trojan TLS, VMess WS+TLS, Shadowsocks 2022)`,
    `- load: wrk, ${wrk.threads} thread(s), ${wrk.connections} connections; each server ${info.warmupSeconds} s warm-up, then ${info.rounds} round(s) of ${wrk.durationSeconds} s measured, the three servers taking turns; timeout ${wrk.timeoutSeconds} s, rotating over all user ids in shuffled order, no Lua per response; each server on CPU ${info.serverCpu}, wrk on CPU ${wrk.cpu} (taskset), the two servers not measured at SCHED_IDLE meanwhile (chrt); server CPU from /proc/<pid>/stat around the measured run, saturated at ≥ ${SATURATED}`,
    `- service: PORTCULLIS_SUB_CACHE_MAX_AGE_MS ${info.maxAgeMs === undefined ? "300000 (its default)" : info.maxAgeMs}; the totals sweep reads every user again within three quarters of it (at most the max age less two sync intervals and a second)`,
    `- node options: the service ${info.serviceNodeArgs.join(" ")} (as npm start); fastify and limit ${info.sampleNodeArgs.join(" ")}`,
    "",
  ];
  for (const result of results) out.push(...dialectBlock(result));
  out.push(...acceptance(info, results), "");
  return out.join("\n");
}

const markers = (users: number) => {
  const label = `${int(users)} users`;
  return {
    start: `<!-- bench:sub results, ${label}: written by \`npm run bench:sub -- --users ${users} --write docs/benchmarks/sub.md\` -->`,
    end: `<!-- /bench:sub results, ${label} -->`,
  };
};

/** Replaces the results block for this user count (between its markers) with `markdown`. */
export function writeResults(file: string, users: number, markdown: string): void {
  const text = readFileSync(file, "utf8");
  const { start: START, end: END } = markers(users);
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start)
    throw new Error(`${file} has no bench:sub results markers for ${users} users:\n${START}\n${END}`);
  writeFileSync(file, `${text.slice(0, start + START.length)}\n${markdown}\n${text.slice(end)}`);
}
