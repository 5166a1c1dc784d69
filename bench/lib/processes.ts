// Child processes of a benchmark, pinned to a CPU with taskset, always stopped: each one is tracked
// until it exits, and SIGINT/SIGTERM stop every tracked process and abort `interrupted` so the run's
// finally blocks (scratch databases, temp dirs) still execute. A second signal exits at once.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { openSync } from "node:fs";

const running = new Set<ChildProcess>();
const controller = new AbortController();

/** Aborted on the first SIGINT/SIGTERM; long loops (seeding) check it. */
export const interrupted: AbortSignal = controller.signal;

function onSignal(signal: NodeJS.Signals): void {
  if (controller.signal.aborted) process.exit(130);
  process.stderr.write(`\n${signal}: stopping ${running.size} child process(es), cleaning up\n`);
  controller.abort(new Error(`interrupted by ${signal}`));
  for (const child of running) child.kill("SIGTERM");
}
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

export type Pinned = {
  child: ChildProcess;
  /** The process's own pid: taskset execs the command, so it is the command's pid too. */
  pid: number;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** What the process wrote to stdout (only with captureStdout). */
  stdout(): string;
  /** The last 20,000 characters the process wrote to stderr (for failure messages). */
  stderr(): string;
};

export type StartOptions = {
  /** The CPU to pin the process to (taskset); none: it runs on any. */
  cpu?: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Collect stdout in memory (wrk) instead of discarding it. */
  captureStdout?: boolean;
  /** Append stdout to this file instead (a service's log, kept for after the run). */
  stdoutFile?: string;
};

export function startPinned(command: string, args: string[], options: StartOptions): Pinned {
  interrupted.throwIfAborted();
  const argv =
    options.cpu === undefined ? [command, ...args] : ["taskset", "-c", String(options.cpu), command, ...args];
  const child = spawn(argv[0] as string, argv.slice(1), {
    env: options.env ?? process.env,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    stdio: ["ignore", stdoutOf(options), "pipe"],
  });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  running.add(child);
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    err = (err + chunk).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => {
      running.delete(child);
      resolve(code);
    });
  });
  return { child, pid: child.pid, exited, stderr: () => err, stdout: () => out };
}

/**
 * Every thread of the process to SCHED_IDLE (idle: true) or back to SCHED_OTHER (chrt, util-linux).
 * A process at SCHED_IDLE gets its CPU only while nothing else wants it: a server that idles
 * between its rounds (its timers, its background writes) then takes nothing from the one measured
 * on the same CPU, and still does its work in that server's idle moments.
 */
export function setIdle(proc: Pinned, idle: boolean): void {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  const policy = idle ? "--idle" : "--other";
  const result = spawnSync("chrt", [policy, "--all-tasks", "--pid", "0", String(proc.pid)], {
    encoding: "utf8",
  });
  if (result.status !== 0)
    throw new Error(`chrt ${policy} ${proc.pid}: ${result.stderr || result.error?.message || result.status}`);
}

/** SIGTERM, then SIGKILL if the process is still there after `graceMs`. */
export async function stop(proc: Pinned, graceMs = 5000): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill("SIGTERM");
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), graceMs);
  try {
    await proc.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `url` until it answers 2xx; fails early if the process exits, or at the deadline. */
export async function waitForHttp(url: string, proc: Pinned, deadlineMs = 30_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  let last = "no answer yet";
  while (Date.now() < deadline) {
    interrupted.throwIfAborted();
    if (proc.child.exitCode !== null) {
      throw new Error(`process exited with ${proc.child.exitCode} before ${url} answered:\n${proc.stderr()}`);
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.ok) return;
      last = `status ${response.status}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${url} did not answer within ${deadlineMs} ms (${last}):\n${proc.stderr()}`);
}

function stdoutOf(options: StartOptions): "pipe" | "ignore" | number {
  if (options.captureStdout === true) return "pipe";
  return options.stdoutFile === undefined ? "ignore" : openSync(options.stdoutFile, "a");
}
