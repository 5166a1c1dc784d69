// The subscription benchmark's report: one markdown block (settings, machine, a table per dialect,
// the acceptance checks of the issue) printed to stdout and, with --write, put between the markers of
// docs/BENCHMARKS.md so the numbers there are always a whole run's, never hand-copied.
import { readFileSync, writeFileSync } from "node:fs";
import { fmt } from "../lib/stats.ts";
import { socketErrors, totalErrors, type WrkResult, type WrkSettings } from "../lib/wrk.ts";

export type Dialect = "sqlite" | "postgres";
/** loadAverage: the machine's 1-minute load average when the measurement began (noise indicator). */
export type Measured = { wrk: WrkResult; peakRssMB: number; loadAverage: number; cache?: CacheUse };
/** The service's GET /api/subscriptions/cache after the run, and its hits/misses during the measurement. */
export type CacheUse = {
  entries: number;
  bytes: number;
  budgetBytes: number;
  layouts: number;
  hits: number;
  misses: number;
  evictions: number;
};
export type DialectResult = {
  dialect: Dialect;
  databaseVersion: string;
  seedSeconds: number;
  bodyBytes: number;
  sub: Measured;
  ceiling: Measured;
};
export type RunInfo = {
  command: string;
  startedAt: string;
  machine: string[];
  users: number;
  linksPerUser: number;
  wrk: WrkSettings;
  warmupSeconds: number;
};

const START = "<!-- bench:sub results: written by `npm run bench:sub -- --write docs/BENCHMARKS.md` -->";
const END = "<!-- /bench:sub results -->";

/** The users the targets are stated for: smaller runs (the CI smoke run) do not report them. */
const TARGET_USERS = 100_000;
/** The targets for the optimised endpoint; reported, not enforced. */
const TARGETS = { ratio: { sqlite: 0.7, postgres: 0.5 }, p99Ms: 20, rssMB: 300 } as const;

export const ratioOf = (result: DialectResult) => result.sub.wrk.rps / result.ceiling.wrk.rps;

function row(label: string, measured: Measured): string {
  const { wrk } = measured;
  return `| ${label} | ${wrk.rps.toFixed(0)} | ${fmt(wrk.latency_ms.p50)} | ${fmt(wrk.latency_ms.p99)} | ${wrk.requests} | ${wrk.errors.non2xx} | ${socketErrors(wrk)} | ${measured.peakRssMB.toFixed(0)} | ${measured.loadAverage.toFixed(2)} |`;
}

function mark(ok: boolean): string {
  return ok ? "pass" : "**fail**";
}

function acceptance(results: DialectResult[], connections: number): string[] {
  const lines = ["| target (for the optimised endpoint) | measured | |", "|---|---|---|"];
  for (const result of results) {
    const { dialect, sub } = result;
    const ratio = ratioOf(result);
    lines.push(
      `| ${dialect}: sub/ceiling ≥ ${TARGETS.ratio[dialect]} | ${ratio.toFixed(2)} | ${mark(ratio >= TARGETS.ratio[dialect])} |`,
    );
    if (dialect === "sqlite") {
      const at = connections === 64 ? "" : ` (measured at ${connections}, target is at 64)`;
      lines.push(
        `| sqlite: p99 ≤ ${TARGETS.p99Ms} ms at 64 connections${at} | ${fmt(sub.wrk.latency_ms.p99)} ms | ${mark(sub.wrk.latency_ms.p99 <= TARGETS.p99Ms)} |`,
        `| sqlite: zero errors | ${totalErrors(sub.wrk)} | ${mark(totalErrors(sub.wrk) === 0)} |`,
      );
    }
    lines.push(
      `| ${dialect}: service RSS ≤ ${TARGETS.rssMB} MB | ${sub.peakRssMB.toFixed(0)} MB | ${mark(sub.peakRssMB <= TARGETS.rssMB)} |`,
    );
  }
  return lines;
}

function cacheLines(cache: CacheUse | undefined): string[] {
  if (cache === undefined) return [];
  const served = cache.hits + cache.misses;
  const hitRate = served === 0 ? 0 : (100 * cache.hits) / served;
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
  return [
    `Response cache (GET /api/subscriptions/cache): ${cache.entries.toLocaleString("en")} entries in ${mb(cache.bytes)} of ${mb(cache.budgetBytes)} MiB, ${cache.layouts} layout(s); during the measurement ${cache.hits.toLocaleString("en")} hits, ${cache.misses.toLocaleString("en")} misses (${hitRate.toFixed(1)} % hits), ${cache.evictions.toLocaleString("en")} evictions.`,
    "",
  ];
}

export function renderReport(info: RunInfo, results: DialectResult[]): string {
  const { wrk } = info;
  const out = [
    `Run of ${info.startedAt}: \`${info.command}\``,
    "",
    ...info.machine.map((line) => `- ${line}`),
    `- data: ${info.users.toLocaleString("en")} users × ${info.linksPerUser} grants (2 servers, 5 inbounds: VLESS REALITY, VLESS WS+TLS, Trojan TLS, VMess WS+TLS, Shadowsocks 2022)`,
    `- load: wrk, ${wrk.threads} thread(s), ${wrk.connections} connections, ${info.warmupSeconds} s warm-up then ${wrk.durationSeconds} s measured, timeout ${wrk.timeoutSeconds} s, rotating over all user ids in shuffled order; server on CPU 0, wrk on CPU ${wrk.cpu} (taskset)`,
    "",
  ];
  for (const result of results) {
    out.push(
      `**${result.dialect}** (${result.databaseVersion}; seeded in ${result.seedSeconds.toFixed(1)} s; body ${result.bodyBytes} bytes)`,
      "",
      "| server | requests/s | p50 ms | p99 ms | requests | non-2xx | socket errors | peak RSS MB | load avg at start |",
      "|---|---|---|---|---|---|---|---|---|",
      row("GET /sub/{user_id} (portcullis serve)", result.sub),
      row("ceiling: bare Fastify, same body and headers", result.ceiling),
      "",
      `sub/ceiling: **${ratioOf(result).toFixed(2)}**`,
      "",
      ...cacheLines(result.sub.cache),
    );
  }
  if (info.users === TARGET_USERS) out.push(...acceptance(results, wrk.connections), "");
  else {
    out.push(
      `The targets are for ${TARGET_USERS.toLocaleString("en")} users and a 20 s measurement; this run (${info.users.toLocaleString("en")} users) checks that every part works, not how fast.`,
      "",
    );
  }
  return out.join("\n");
}

/** Replaces the results block of the file (between the markers) with `markdown`. */
export function writeResults(file: string, markdown: string): void {
  const text = readFileSync(file, "utf8");
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start)
    throw new Error(`${file} has no bench:sub results markers:\n${START}\n${END}`);
  writeFileSync(file, `${text.slice(0, start + START.length)}\n${markdown}\n${text.slice(end)}`);
}
