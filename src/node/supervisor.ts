// The node agent owns its core as a child process: writes its config (base-config.ts), starts it,
// waits until its API answers, restarts it with backoff whenever it exits, and reports what runs
// (flavor, version, uptime, restarts). The core's stdout is the access log: each line goes to the
// listeners (online addresses, cutting connections) and into a ring of the last 200 lines, each
// line bounded (bounded-lines.ts: at most 4 KiB of it is kept, however long the core makes it).

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { CORE_CALL_TIMEOUT_MS, CoreRelay } from "../cores/core-relay.ts";
import { type BaseDocument, coreConfig } from "../cores/node-base-config.ts";
import { CORE_LOG_LINES } from "../lib/core-log.ts";
import { writeFileAtomic } from "./atomic-file.ts";
import { BoundedLines } from "./bounded-lines.ts";

export type SupervisorOptions = {
  /** The core binary (xray or v2ray). */
  binary: string;
  /** Arguments; `{config}` is replaced by the config file's path. Default ["-config", "{config}"]. */
  args?: readonly string[];
  /** Where the config file is written. */
  dir: string;
  apiPort: number;
  backoff?: { initialMs: number; maxMs: number };
  /** Deadline of a counter read with reset through `relay` (CoreRelay's default when absent). */
  trafficReadTimeoutMs?: number;
  /** A run this long counts as stable: the next crash starts the backoff again from initialMs. */
  stableMs?: number;
  log?: (message: string, fields?: Record<string, unknown>) => void;
};

export type CoreReport = {
  flavor: "xray" | "v2ray" | null;
  version: string | null;
  running: boolean;
  pid: number | null;
  started_at: string | null;
  uptime_seconds: number | null;
  restarts: number;
  last_exit: string | null;
};

const RING_SIZE = CORE_LOG_LINES;
const SYS_STATS_PATHS = [
  "/xray.app.stats.command.StatsService/GetSysStats",
  "/v2ray.core.app.stats.command.StatsService/GetSysStats",
];

export class CoreSupervisor extends EventEmitter<{ ready: []; line: [string]; exit: [string] }> {
  readonly relay: CoreRelay;
  private child: ChildProcess | null = null;
  private base: BaseDocument | null = null;
  private startedAt: number | null = null;
  private restarts = 0;
  private lastExit: string | null = null;
  private failures = 0;
  private isStopping = false;
  private readonly ring: string[] = [];
  private identity: { flavor: "xray" | "v2ray" | null; version: string | null } = {
    flavor: null,
    version: null,
  };
  private readonly configPath: string;

  constructor(private readonly options: SupervisorOptions) {
    super();
    this.configPath = join(options.dir, "core-config.json");
    this.relay = new CoreRelay(
      `127.0.0.1:${options.apiPort}`,
      CORE_CALL_TIMEOUT_MS,
      options.trafficReadTimeoutMs,
    );
  }

  async start(base: BaseDocument): Promise<void> {
    this.base = base;
    this.identity = await readIdentity(this.options.binary);
    await this.writeConfig();
    this.spawnCore();
  }

  /** A changed base document: the config is rewritten and the core restarted with it. */
  async applyBase(base: BaseDocument, timeoutMs = 15_000): Promise<void> {
    this.base = base;
    await this.writeConfig();
    const ready = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.once("ready", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.failures = 0;
    this.child?.kill("SIGTERM");
    await ready;
  }

  report(now = Date.now()): CoreReport {
    const running = this.child !== null && this.child.exitCode === null && this.startedAt !== null;
    return {
      ...this.identity,
      running,
      pid: running ? (this.child?.pid ?? null) : null,
      started_at: running && this.startedAt !== null ? new Date(this.startedAt).toISOString() : null,
      uptime_seconds: running && this.startedAt !== null ? Math.floor((now - this.startedAt) / 1000) : null,
      restarts: this.restarts,
      last_exit: this.lastExit,
    };
  }

  recentLines(): string[] {
    return [...this.ring];
  }

  async stop(): Promise<void> {
    this.isStopping = true;
    const child = this.child;
    if (child !== null && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(killer);
    }
    this.relay.close();
  }

  private async writeConfig(): Promise<void> {
    if (this.base === null) throw new Error("no base document");
    const config = coreConfig(this.base, { port: this.options.apiPort });
    await writeFileAtomic(this.configPath, `${JSON.stringify(config, null, 2)}\n`, 0o600);
  }

  private spawnCore(): void {
    const args = (this.options.args ?? ["-config", "{config}"]).map((a) =>
      a.replaceAll("{config}", this.configPath),
    );
    const child = spawn(this.options.binary, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    const started = Date.now();
    this.startedAt = started;
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      // Bounded (bounded-lines.ts): a huge line or a flood cannot grow the agent's memory.
      const lines = new BoundedLines((line) => this.onLine(line));
      stream.on("data", (chunk: Buffer) => lines.push(chunk));
      stream.once("end", () => lines.end());
    }
    child.once("error", (error) => this.options.log?.("core failed to start", { err: error.message }));
    child.once("exit", (code, signal) => {
      this.startedAt = null;
      this.lastExit = signal === null ? `exit code ${code}` : `signal ${signal}`;
      this.emit("exit", this.lastExit);
      if (this.isStopping) return;
      const ranFor = Date.now() - started;
      this.failures = ranFor >= (this.options.stableMs ?? 30_000) ? 0 : this.failures + 1;
      void this.restartLater();
    });
    void this.waitReady(child);
  }

  private async restartLater(): Promise<void> {
    const { initialMs, maxMs } = this.options.backoff ?? { initialMs: 100, maxMs: 30_000 };
    const wait = Math.min(maxMs, initialMs * 2 ** Math.max(0, this.failures - 1));
    this.options.log?.("core exited; restarting", { last_exit: this.lastExit, in_ms: wait });
    await delay(wait);
    if (this.isStopping) return;
    this.restarts += 1;
    this.spawnCore();
  }

  /** Polls GetSysStats (either namespace) until the new process answers, then says "ready". */
  private async waitReady(child: ChildProcess): Promise<void> {
    for (let attempt = 0; attempt < 600; attempt += 1) {
      if (this.child !== child || child.exitCode !== null || this.isStopping) return;
      for (const path of SYS_STATS_PATHS) {
        const answer = await this.relay.call(path, new Uint8Array());
        if (answer.ok) {
          if (this.child === child && child.exitCode === null) this.emit("ready");
          return;
        }
      }
      await delay(50);
    }
  }

  private onLine(line: string): void {
    this.ring.push(line);
    if (this.ring.length > RING_SIZE) this.ring.shift();
    this.emit("line", line);
  }
}

/** `<binary> -version`: "Xray 25.10.15 (...)" or "V2Ray 4.34.0 (...)". */
function readIdentity(binary: string): Promise<{ flavor: "xray" | "v2ray" | null; version: string | null }> {
  return new Promise((resolve) => {
    execFile(binary, ["-version"], { timeout: 5000 }, (_error, stdout) => {
      const match = /^(Xray|V2Ray)\s+(\S+)/m.exec(String(stdout));
      if (match === null) resolve({ flavor: null, version: null });
      else resolve({ flavor: match[1] === "Xray" ? "xray" : "v2ray", version: match[2] ?? null });
    });
  });
}
