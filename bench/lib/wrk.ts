// Runs wrk pinned to one CPU with a Lua script whose done() prints a "BENCH_RESULT {json}" line
// (bench/sub/rotate.lua), and parses that line. Socket errors and error statuses are kept apart.
import { startPinned, stop } from "./processes.ts";

export type WrkSettings = {
  threads: number;
  connections: number;
  durationSeconds: number;
  /** Requests slower than this count as timeout errors. */
  timeoutSeconds: number;
  cpu: number;
};

export type WrkResult = {
  requests: number;
  seconds: number;
  rps: number;
  bytes: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** status: answers with status 400 or above, as wrk counts them itself. */
  errors: { status: number; connect: number; read: number; write: number; timeout: number };
};

export function socketErrors(result: WrkResult): number {
  const { connect, read, write, timeout } = result.errors;
  return connect + read + write + timeout;
}

export function totalErrors(result: WrkResult): number {
  return result.errors.status + socketErrors(result);
}

export async function runWrk(
  settings: WrkSettings,
  url: string,
  script: string,
  scriptArgs: string[],
): Promise<WrkResult> {
  const args = [
    `--threads=${settings.threads}`,
    `--connections=${settings.connections}`,
    `--duration=${settings.durationSeconds}s`,
    `--timeout=${settings.timeoutSeconds}s`,
    `--script=${script}`,
    url,
    "--",
    ...scriptArgs,
  ];
  const wrk = startPinned("wrk", args, { cpu: settings.cpu, captureStdout: true });
  let code: number | null;
  try {
    code = await wrk.exited;
  } finally {
    await stop(wrk);
  }
  const line = wrk
    .stdout()
    .split("\n")
    .find((text) => text.startsWith("BENCH_RESULT "));
  if (code !== 0 || line === undefined) {
    throw new Error(`wrk exited with ${code} without a result:\n${wrk.stdout()}\n${wrk.stderr()}`);
  }
  return JSON.parse(line.slice("BENCH_RESULT ".length)) as WrkResult;
}
