// `npm run bench:node [-- --users N --rounds R --idle-seconds S --write docs/benchmarks/node.md]`:
// a real node agent (`portcullis node run` from its bundle, its own process, as an installed package runs it) owning a real V2Ray core,
// enrolled with a panel in this process, N users granted through it. Measured (issue 47):
// (a) the agent's resident memory while idle with N users on its core (sampled for S seconds, which
//     covers the agent's traffic reads every 10 s);
// (b) per round: the core's own AddUser time for N users sent straight to its API over gRPC
//     (pre-encoded requests, 16 and then 64 in flight; the faster is the reference), then the core
//     killed (SIGKILL): the agent restarts it and re-applies its desired state from disk, and the
//     re-apply's time (core ready → every user back) is compared with the reference.
// CPU seconds of the agent, the core and this process in each window, and the load average, are in
// the report: on a shared 2-vCPU machine a ratio means little without them.
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pino from "pino";
import { buildApp } from "../src/app.ts";
import { loadConfig } from "../src/config/config.ts";
import { CoreRelay } from "../src/cores/core-relay.ts";
import { GrpcCoreClient } from "../src/cores/grpc-core-client.ts";
import { buildInbound, buildUser } from "../src/cores/inbound-builder/build.ts";
import { v2rayApi } from "../src/cores/v2ray-api.ts";
import { createDeps } from "../src/deps.ts";
import { grantsOf, probeCore } from "../test/support/convergence.ts";
import { LOOPBACK_BASE } from "../test/support/node-agent.ts";
import { waitFor } from "../test/support/poll.ts";
import { freePort } from "../test/support/ports.ts";
import { kindTemplate } from "../test/support/provisioning.ts";
import { CleanupStack } from "../test/support/v2ray.ts";
import { clockTicksPerSecond, readCpuSeconds } from "./lib/cpu.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { writeBetweenMarkers } from "./lib/markers.ts";
import { interrupted, type Pinned, startPinned, stop } from "./lib/processes.ts";
import { readPeakRssMB, sampleRss } from "./lib/rss.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string", default: "10000" },
    rounds: { type: "string", default: "3" },
    "idle-seconds": { type: "string", default: "30" },
    /** Seconds after the grant before the idle window opens (the agent settles 1 s after its work). */
    "settle-seconds": { type: "string", default: "3" },
    write: { type: "string" },
    /** Replaces the unit's NODE_OPTIONS for the agent (to try V8 flags). */
    "node-options": { type: "string" },
    /** Extra flags on the agent's `node` command line, e.g. "--cpu-prof --cpu-prof-dir=DIR" (not allowed in NODE_OPTIONS). */
    "agent-flags": { type: "string" },
    /** The panel's inline cap for AddInbound (0: every user by AddUser, as node servers had before). */
    "inline-max-bytes": { type: "string" },
  },
});
const INLINE_MAX_BYTES =
  values["inline-max-bytes"] === undefined ? undefined : Number(values["inline-max-bytes"]);
const USERS = Number(values.users);
const ROUNDS = Number(values.rounds);
const IDLE_SECONDS = Number(values["idle-seconds"]);
const SETTLE_SECONDS = Number(values["settle-seconds"]);
const REFERENCE_CONCURRENCY = [16, 64];
const ROOT = new URL("..", import.meta.url).pathname;
/** What `portcullis node …` runs from an installed package (bin/portcullis.mjs). */
const BUNDLE = join(ROOT, "dist/portcullis-node.mjs");
const GOAL_RSS_MB = 80;
const UNIT = join(ROOT, "deploy/portcullis-node.service");

/** The environment the systemd unit gives the agent (its `Environment=` lines): measured as shipped. */
function unitEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  // `Environment=NAME=value` or, with spaces in the value, `Environment="NAME=value with spaces"`.
  for (const match of readFileSync(UNIT, "utf8").matchAll(/^Environment=("?)([A-Z_]+)=(.*)\1$/gm)) {
    env[match[2] as string] = match[3] as string;
  }
  if (values["node-options"] !== undefined) env.NODE_OPTIONS = values["node-options"];
  return env;
}
const AGENT_ENV = unitEnvironment();
const GOAL_RATIO = 1.5;

type Json = Record<string, unknown>;
type Reference = { concurrency: number; ms: number; coreCpu: number; benchCpu: number };
type Round = {
  references: Reference[];
  /** Core ready → every user back, as the agent timed it (its log line). */
  replayMs: number;
  /** SIGKILL → the agent's "re-applied" line: the restart, the core's start, the re-apply. */
  killToDoneMs: number;
  agentCpu: number;
  coreCpu: number;
  /** This process (the panel) over SIGKILL → re-applied: it takes no part, so near zero. */
  panelCpu: number;
  /** The agent's RSS just before the kill, and its peak over SIGKILL → re-applied. */
  agentRssBeforeMB: number;
  agentRssPeakMB: number;
  /** The agent's CPU by thread kind over SIGKILL → re-applied. */
  agentThreads: string;
  failed: number;
  users: number;
  load: number;
};

const log = (text: string) => process.stderr.write(`  ${text}\n`);
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? Number.NaN;
const mb = (value: number) => `${value.toFixed(1)} MB`;
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** The pids of a process's children (Linux: /proc/<pid>/task/<tid>/children of every thread). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim();
    if (text !== "") out.push(...text.split(" ").map(Number));
  }
  return out;
}

/**
 * The agent's CPU by thread kind (main thread, V8's GC helpers, libuv's pool for file I/O), user and
 * system seconds (/proc/<pid>/task/<tid>/stat; threads that exited are not counted here).
 */
function threadCpu(pid: number): Map<string, { user: number; system: number }> {
  const out = new Map<string, { user: number; system: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
    } catch {
      continue;
    }
    const name = text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
    const kind = Number(tid) === pid ? "main" : name.replace(/[\d\s]+$/, "").trim();
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const entry = out.get(kind) ?? { user: 0, system: 0 };
    entry.user += Number(fields[11]) / clockTicksPerSecond();
    entry.system += Number(fields[12]) / clockTicksPerSecond();
    out.set(kind, entry);
  }
  return out;
}

/** What each thread kind spent between two readings: "main 50.1 s (user 40.0 + system 10.1); …". */
function threadCpuSince(pid: number, before: Map<string, { user: number; system: number }>): string {
  return [...threadCpu(pid)]
    .map(([kind, now]) => {
      const was = before.get(kind) ?? { user: 0, system: 0 };
      const user = now.user - was.user;
      const system = now.system - was.system;
      return { kind, user, system };
    })
    .filter((t) => t.user + t.system >= 0.05)
    .sort((a, b) => b.user + b.system - (a.user + a.system))
    .map(
      (t) =>
        `${t.kind} ${(t.user + t.system).toFixed(1)} s (user ${t.user.toFixed(1)} + system ${t.system.toFixed(1)})`,
    )
    .join("; ");
}

function cpuOf(pid: number): number {
  try {
    return readCpuSeconds(pid);
  } catch {
    return Number.NaN;
  }
}

/** The agent's JSON log lines (stderr), as they come. */
function agentLog(agent: Pinned): { lines: Json[] } {
  const state = { lines: [] as Json[] };
  let partial = "";
  agent.child.stderr?.on("data", (chunk: string) => {
    partial += chunk;
    const parts = partial.split("\n");
    partial = parts.pop() ?? "";
    for (const part of parts) {
      try {
        state.lines.push(JSON.parse(part) as Json);
      } catch {
        // not one of the agent's lines
      }
    }
  });
  return state;
}

async function setup(stack: CleanupStack) {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-bench-node-"));
  stack.add(() => rmSync(dataDir, { recursive: true, force: true }));
  const deps = await createDeps(loadConfig({ DATA_DIR: dataDir }), {
    logger: pino({ level: "warn" }),
    ...(INLINE_MAX_BYTES === undefined ? {} : { inlineUsersMaxBytes: INLINE_MAX_BYTES }),
  });
  stack.add(() => deps.close());
  const app = await buildApp(deps);
  stack.add(() => app.close());
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (typeof address !== "object" || address === null) throw new Error("the panel does not listen");
  const panelUrl = `http://127.0.0.1:${address.port}`;
  const admin = { username: "admin", password: "bench password 1" };
  await deps.services.auth.ensureFirstAdmin(admin.username, admin.password);
  const login = await app.inject({ method: "POST", url: "/api/auth/token", payload: admin });
  const authorization = `Bearer ${login.json().access_token}`;
  const api: Api = async (method, url, payload) => {
    const res = await app.inject({
      method,
      url,
      headers: { authorization },
      ...(method === "DELETE" ? {} : { payload }),
    });
    if (res.statusCode >= 300)
      throw new Error(`${method} ${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    return res.statusCode === 204 ? {} : (res.json() as Json);
  };

  // A node server, its base, the join through the bundle's CLI, and the agent from the bundle.
  const agentPort = await freePort();
  const coreApiPort = await freePort();
  const server = await api("POST", "/api/servers", {
    name: "bench node",
    hostname: "127.0.0.1",
    grpc_port: agentPort,
    connection: "node",
  });
  const serverId = String(server.id);
  await api("PUT", `/api/servers/${serverId}/node-base`, { document: LOOPBACK_BASE });
  const enrollment = await api("POST", `/api/servers/${serverId}/node-enrollment`, {});
  const agentDir = join(dataDir, "agent");
  // Not spawnSync: the panel answering the join runs in this process.
  const joining = startPinned(
    process.execPath,
    [BUNDLE, "node", "join", String(enrollment.join_string), "--dir", agentDir, "--panel", panelUrl],
    {},
  );
  const joinCode = await joining.exited;
  if (joinCode !== 0) throw new Error(`node join failed: ${joining.stderr()}`);
  const agent = startPinned(
    process.execPath,
    [
      "--enable-source-maps",
      ...(values["agent-flags"]?.split(" ").filter((flag) => flag !== "") ?? []),
      BUNDLE,
      "node",
      "run",
      ...["--dir", agentDir, "--host", "127.0.0.1", "--port", String(agentPort)],
      ...["--core", "v2ray", "--core-api-port", String(coreApiPort)],
    ],
    { env: { ...process.env, ...AGENT_ENV }, captureStdout: true },
  );
  stack.add(() => stop(agent, 10_000));
  const agentLines = agentLog(agent);
  await waitFor(() => /listening \d+/.test(agent.stdout()) || agent.child.exitCode !== null, {
    timeoutMs: 60_000,
    what: "the agent to listen",
  });
  if (agent.child.exitCode !== null) throw new Error(`the agent exited: ${agent.stderr()}`);

  // N users granted through the agent (the panel's bulk grant, relayed and recorded by the agent).
  const template = await api(
    "POST",
    "/api/templates",
    kindTemplate({ protocol: "vless", network: "tcp", tls: false }),
  );
  const ids = await insertUsers(deps, USERS);
  // The agent's inbound, without users: the panel's first call through the agent sends the server's
  // base document, and the agent restarts its core with it. The core measured below is that one.
  const inbound = await api("POST", `/api/servers/${serverId}/inbounds`, {
    template_id: template.id,
    port: await freePort(),
  });
  await deps.services.reconciler.tick(serverId, AbortSignal.timeout(600_000));
  await waitFor(
    async () =>
      (
        await deps.database.db
          .selectFrom("server_inbounds")
          .select("sync_state")
          .where("id", "=", String(inbound.id))
          .executeTakeFirstOrThrow()
      ).sync_state === "synced",
    { timeoutMs: 60_000, what: "the agent's inbound on its core (restarted with the base document)" },
  );
  const probeClient = new GrpcCoreClient({ address: `127.0.0.1:${coreApiPort}`, layout: "v2ray-4" });
  try {
    await waitFor(async () => (await probeClient.getSysStats().catch(() => undefined)) !== undefined, {
      timeoutMs: 60_000,
      what: "the agent's core to answer",
    });
  } finally {
    probeClient.close();
  }
  const corePid = childrenOf(agent.pid)[0];
  if (corePid === undefined) throw new Error("the agent has no core");

  // The agent with its core up and no users: what it holds before any grant.
  const empty = sampleRss(agent.pid, 200);
  await pause(3000);
  const agentEmpty = empty.stop();

  // (c) The direct path first, onto the same core: a server of the default connection pointed at the
  // core's own API (the panel's gRPC client, no agent in between), the same users granted the same
  // way. Its inbound is deleted afterwards, so the agent's push also starts on a core without users.
  const direct = await api("POST", "/api/servers", {
    name: "bench direct",
    hostname: "127.0.0.1",
    grpc_port: coreApiPort,
  });
  const directServerId = String(direct.id);
  const directInbound = await api("POST", `/api/servers/${directServerId}/inbounds`, {
    template_id: template.id,
    port: await freePort(),
  });
  const directPush = await measurePush(deps, api, directServerId, String(directInbound.id), ids, {
    agent: agent.pid,
    core: corePid,
  });
  log(`direct push of ${USERS} users: ${sec(directPush.ms)}, panel CPU ${directPush.panelCpu.toFixed(2)} s`);
  await api("DELETE", `/api/servers/${directServerId}/inbounds/${directInbound.id}`, {});
  await deps.services.reconciler.tick(directServerId, AbortSignal.timeout(600_000));

  // N users granted through the agent (the panel's bulk grant, relayed and recorded by the agent).
  const agentPush = await measurePush(deps, api, serverId, String(inbound.id), ids, {
    agent: agent.pid,
    core: corePid,
  });
  const bulkMs = agentPush.ms;
  log(
    `granted ${USERS} users through the agent in ${sec(bulkMs)}, panel CPU ${agentPush.panelCpu.toFixed(2)} s, agent CPU ${agentPush.agentCpu.toFixed(2)} s`,
  );
  // A full apply through the agent (POST /sync: V2Ray re-applies the inbound with its users inline
  // in the AddInbound, or by AddUser with --inline-max-bytes 0).
  const fullApply = await measureFullApply(deps, serverId, { agent: agent.pid, core: corePid });
  log(
    `full apply of ${USERS} users through the agent (inline cap ${INLINE_MAX_BYTES ?? "default"}): ${sec(fullApply.ms)}, panel CPU ${fullApply.panelCpu.toFixed(2)} s, agent CPU ${fullApply.agentCpu.toFixed(2)} s, core CPU ${fullApply.coreCpu.toFixed(2)} s, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  return {
    deps,
    serverId,
    agent,
    agentLines,
    coreApiPort,
    bulkMs,
    agentDir,
    agentEmpty,
    directPush,
    agentPush,
  };
}

type Api = (method: "POST" | "PUT" | "DELETE", url: string, payload: Json) => Promise<Json>;
type Push = {
  ms: number;
  panelCpu: number;
  agentCpu: number;
  coreCpu: number;
  /** The agent's RSS over the push (sampled every 200 ms). */
  agentRss: { peakMB: number; lastMB: number };
  /** The agent's CPU by thread kind over the push. */
  agentThreads: string;
};

async function insertUsers(deps: Awaited<ReturnType<typeof createDeps>>, count: number): Promise<string[]> {
  const now = new Date().toISOString();
  const ids = Array.from({ length: count }, () => randomUUID());
  for (let i = 0; i < count; i += 1000) {
    const rows = ids
      .slice(i, i + 1000)
      .map((id, k) => ({ id, name: `bench ${i + k}`, created_at: now, updated_at: now }));
    await deps.database.db.insertInto("users").values(rows).execute();
  }
  return ids;
}

/**
 * Every user granted on one inbound through the panel's bulk grant, in requests of 1,000 (a bulk grant
 * pushes within a time budget and leaves the rest pending for the reconcile job, which does not run
 * here: the reconciler is ticked until nothing is pending), timed, with the CPU of the panel (this
 * process: the API, SQLite, the core client), the agent and the core over the same window.
 */
async function measurePush(
  deps: Awaited<ReturnType<typeof createDeps>>,
  api: Api,
  serverId: string,
  inboundId: string,
  ids: string[],
  pids: { agent: number; core: number },
): Promise<Push> {
  const pending = async () =>
    (
      await deps.database.db
        .selectFrom("user_access")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("server_id", "=", serverId)
        .where("sync_state", "!=", "synced")
        .executeTakeFirstOrThrow()
    ).n;
  return measured(pids, async () => {
    for (let i = 0; i < ids.length; i += 1000) {
      await api("POST", `/api/servers/${serverId}/inbounds/${inboundId}/users/bulk`, {
        user_ids: ids.slice(i, i + 1000),
      });
    }
    for (let tick = 0; Number(await pending()) > 0; tick++) {
      if (tick >= 20) throw new Error(`${await pending()} grants on server ${serverId} still not synced`);
      await deps.services.reconciler.tick(serverId, AbortSignal.timeout(600_000));
    }
  });
}

/** POST /sync's full apply of one server, and the ticks after it until every grant is synced. */
async function measureFullApply(
  deps: Awaited<ReturnType<typeof createDeps>>,
  serverId: string,
  pids: { agent: number; core: number },
): Promise<Push> {
  return measured(pids, async () => {
    const summary = await deps.services.reconciler.syncNow(serverId, AbortSignal.timeout(600_000));
    if (summary === undefined) throw new Error("the full apply was not run here");
  });
}

/** `work` timed, with the CPU of the panel (this process), the agent and the core, and the agent's RSS. */
async function measured(pids: { agent: number; core: number }, work: () => Promise<void>): Promise<Push> {
  const rss = sampleRss(pids.agent, 200);
  const cpu = { panel: process.cpuUsage(), agent: cpuOf(pids.agent), core: cpuOf(pids.core) };
  const threads = threadCpu(pids.agent);
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  const panel = process.cpuUsage(cpu.panel);
  return {
    ms,
    panelCpu: (panel.user + panel.system) / 1e6,
    agentCpu: cpuOf(pids.agent) - cpu.agent,
    coreCpu: cpuOf(pids.core) - cpu.core,
    agentRss: rss.stop(),
    agentThreads: threadCpuSince(pids.agent, threads),
  };
}

async function pause(ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    interrupted.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, Math.min(100, until - Date.now())));
  }
}

/** The core's own AddUser time: N pre-encoded requests straight to its API, `concurrency` in flight. */
async function reference(
  apiPort: number,
  corePid: number,
  tag: string,
  concurrency: number,
): Promise<Reference> {
  const address = `127.0.0.1:${apiPort}`;
  const client = new GrpcCoreClient({ address, layout: "v2ray-4" });
  const relay = new CoreRelay(address);
  try {
    const settings = { clients: [], decryption: "none" };
    const json = { tag, port: await freePort(), listen: "127.0.0.1", protocol: "vless", settings };
    const inbound = buildInbound(json, "v2ray");
    if (!inbound.ok) throw new Error(JSON.stringify(inbound.problems));
    await client.replaceInbound(inbound.value);
    const calls = Array.from({ length: USERS }, (_, i) => {
      const user = buildUser("vless", "v2ray", { email: `${tag}-${i}`, credential: randomUUID() });
      if (!user.ok) throw new Error(JSON.stringify(user.problems));
      return v2rayApi.addUser(tag, user.value);
    });
    // The channel connected before the clock starts.
    await relay.call(v2rayApi.getSysStats().path, v2rayApi.getSysStats().request);
    const cpuStart = { core: cpuOf(corePid), bench: process.cpuUsage() };
    const started = performance.now();
    let next = 0;
    let failed = 0;
    const worker = async () => {
      while (next < calls.length) {
        const call = calls[next++];
        if (call === undefined) break;
        const answer = await relay.call(call.path, call.request);
        if (!answer.ok) failed += 1;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const ms = performance.now() - started;
    const bench = process.cpuUsage(cpuStart.bench);
    if (failed > 0) throw new Error(`${failed} AddUser calls failed in the reference`);
    await client.removeInbound(tag);
    return {
      concurrency,
      ms,
      coreCpu: cpuOf(corePid) - cpuStart.core,
      benchCpu: (bench.user + bench.system) / 1e6,
    };
  } finally {
    relay.close();
    client.close();
  }
}

async function round(index: number, s: Awaited<ReturnType<typeof setup>>): Promise<Round> {
  const [corePid] = childrenOf(s.agent.pid);
  if (corePid === undefined) throw new Error("the agent has no core");
  const references: Reference[] = [];
  for (const concurrency of REFERENCE_CONCURRENCY) {
    references.push(await reference(s.coreApiPort, corePid, `ref-${index}-${concurrency}`, concurrency));
  }
  const load = loadavg()[0] ?? Number.NaN;
  const replays = () => s.agentLines.lines.filter((line) => line.msg === "desired state re-applied").length;
  const before = replays();
  const rss = sampleRss(s.agent.pid, 100);
  const agentRssBeforeMB = rss.stop().lastMB;
  const rssWindow = sampleRss(s.agent.pid, 100);
  const panelCpuStart = process.cpuUsage();
  const agentCpuStart = cpuOf(s.agent.pid);
  const threadsStart = threadCpu(s.agent.pid);
  const killedAt = performance.now();
  process.kill(corePid, "SIGKILL");
  let newCore: number | undefined;
  await waitFor(
    () => {
      const pid = childrenOf(s.agent.pid).find((p) => p !== corePid);
      if (pid !== undefined) newCore = pid;
      return replays() > before;
    },
    { timeoutMs: 300_000, intervalMs: 5, what: "the agent's re-apply after the core was killed" },
  );
  const killToDoneMs = performance.now() - killedAt;
  const agentCpu = cpuOf(s.agent.pid) - agentCpuStart;
  const panelCpu = process.cpuUsage(panelCpuStart);
  const agentRssPeakMB = rssWindow.stop().peakMB;
  const agentThreads = threadCpuSince(s.agent.pid, threadsStart);
  // The new core's whole life so far: its start and the re-apply.
  const coreCpu = newCore === undefined ? Number.NaN : cpuOf(newCore);
  const line = s.agentLines.lines.filter((l) => l.msg === "desired state re-applied").at(-1) ?? {};
  return {
    references,
    replayMs: Number(line.duration_ms),
    killToDoneMs,
    agentCpu,
    coreCpu,
    panelCpu: (panelCpu.user + panelCpu.system) / 1e6,
    agentRssBeforeMB,
    agentRssPeakMB,
    agentThreads,
    failed: Number(line.failed),
    users: Number(line.users),
    load,
  };
}

/** Described before anything runs, so the load average is the one at the start. */
const MACHINE = describeMachine([
  "v2ray: Debian 4.34 (the agent's child, API on 127.0.0.1)",
  describeCode(ROOT),
]);

async function main(): Promise<number> {
  const built = spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs")], { stdio: "inherit" });
  if (built.status !== 0) throw new Error("npm run build failed");
  const stack = new CleanupStack();
  try {
    const s = await setup(stack);
    // (a) Idle: nothing calls the agent; its traffic reads (every 10 s) go on. The window opens
    // SETTLE_SECONDS after the grant's last call: the agent hands a burst's garbage back 1 s after
    // its work pauses (src/node/heap-settle.ts). What it held at the end of the grant is reported too.
    const atGrantEnd = sampleRss(s.agent.pid).stop().lastMB;
    const settleUntil = Date.now() + SETTLE_SECONDS * 1000;
    while (Date.now() < settleUntil) {
      interrupted.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const idleCpu = cpuOf(s.agent.pid);
    const sampler = sampleRss(s.agent.pid, 200);
    const idleUntil = Date.now() + IDLE_SECONDS * 1000;
    while (Date.now() < idleUntil) {
      interrupted.throwIfAborted();
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const idle = sampler.stop();
    const idleCpuSeconds = cpuOf(s.agent.pid) - idleCpu;
    const rollup = readFileSync(`/proc/${s.agent.pid}/smaps_rollup`, "utf8");
    log(
      `agent memory: ${rollup
        .split("\n")
        .filter((l) => /^(Rss|Pss_Anon|Pss_File|Anonymous|Private_Dirty|Shared_Clean):/.test(l))
        .map((l) => l.replace(/\s+/g, " "))
        .join("; ")}`,
    );
    const peakSinceStart = readPeakRssMB(s.agent.pid) ?? Number.NaN;
    log(
      `idle: RSS peak ${mb(idle.peakMB)}, last ${mb(idle.lastMB)}; at the grant's end ${mb(atGrantEnd)}; since start ${mb(peakSinceStart)}`,
    );
    // (b) Rounds of reference then kill → re-apply.
    const rounds: Round[] = [];
    for (let i = 1; i <= ROUNDS; i++) {
      const r = await round(i, s);
      rounds.push(r);
      const ref = Math.min(...r.references.map((x) => x.ms));
      log(
        `round ${i}: reference ${r.references.map((x) => `${x.concurrency}: ${sec(x.ms)}`).join(", ")}; ` +
          `re-apply ${sec(r.replayMs)} (${(r.replayMs / ref).toFixed(2)}×), kill → done ${sec(r.killToDoneMs)}, failed ${r.failed}`,
      );
    }
    // Every user is on the core after the last re-apply (AddUser of each answers "already exists").
    const probe = await probeCore(`127.0.0.1:${s.coreApiPort}`, await grantsOf(s.deps, s.serverId));
    const rssAfter = sampleRss(s.agent.pid).stop();
    const report = render(
      s,
      s.bulkMs,
      idle,
      idleCpuSeconds,
      peakSinceStart,
      rounds,
      probe.present.length,
      rssAfter.lastMB,
      atGrantEnd,
    );
    process.stdout.write(`${report}\n`);
    if (values.write !== undefined) writeBetweenMarkers(values.write, "bench:node results", report);
    return probe.present.length === USERS && rounds.every((r) => r.failed === 0 && r.users === USERS) ? 0 : 1;
  } finally {
    await stack.run();
  }
}

function render(
  s: Pick<Awaited<ReturnType<typeof setup>>, "agentEmpty" | "directPush" | "agentPush">,
  bulkMs: number,
  idle: { peakMB: number; lastMB: number; samples: number },
  idleCpuSeconds: number,
  peakSinceStart: number,
  rounds: Round[],
  present: number,
  rssAfterMB: number,
  atGrantEndMB: number,
): string {
  const refOf = (r: Round) => Math.min(...r.references.map((x) => x.ms));
  const ratios = rounds.map((r) => r.replayMs / refOf(r));
  const ratio = median(ratios);
  const rows = rounds.map((r, i) => {
    const refs = r.references
      .map(
        (x) =>
          `${x.concurrency}: ${sec(x.ms)} (core ${x.coreCpu.toFixed(2)} s, ${Math.round((100 * x.coreCpu * 1000) / x.ms)} %; bench ${x.benchCpu.toFixed(2)} s)`,
      )
      .join("<br>");
    const cells = [
      String(i + 1),
      r.load.toFixed(1),
      refs,
      `${sec(r.replayMs)}`,
      `**${(r.replayMs / refOf(r)).toFixed(2)}×**`,
      sec(r.killToDoneMs),
      `agent ${r.agentCpu.toFixed(2)} s (${Math.round((100 * r.agentCpu * 1000) / r.killToDoneMs)} %), core ${r.coreCpu.toFixed(2)} s, panel ${r.panelCpu.toFixed(2)} s; agent RSS ${mb(r.agentRssBeforeMB)} → peak ${mb(r.agentRssPeakMB)}`,
      `${r.users - r.failed} / ${r.users}`,
    ];
    return `| ${cells.join(" | ")} |`;
  });
  return [
    ...MACHINE.map((line) => `- ${line}`),
    `- ${USERS.toLocaleString("en")} VLESS users granted through the agent (bulk grants of 1,000, relayed and recorded): ${sec(bulkMs)}`,
    "",
    `**Agent RSS idle with ${USERS.toLocaleString("en")} users** (${IDLE_SECONDS} s from ${SETTLE_SECONDS} s after the grant's last call, ${idle.samples} samples): peak **${mb(idle.peakMB)}**, last ${mb(idle.lastMB)}; agent CPU while idle ${((100 * idleCpuSeconds) / IDLE_SECONDS).toFixed(1)} %; at the grant's last call ${mb(atGrantEndMB)}; peak since start (the bulk grant included) ${mb(peakSinceStart)}; after the rounds ${mb(rssAfterMB)}. Goal ≤ ${GOAL_RSS_MB} MB: **${idle.peakMB <= GOAL_RSS_MB ? "met" : "not met"}**.`,
    "",
    `**Re-apply after a core restart / the core's own AddUser time**, median of ${rounds.length}: **${ratio.toFixed(2)}×** (goal ≤ ${GOAL_RATIO}×: **${ratio <= GOAL_RATIO ? "met" : "not met"}**). After the last round the core holds ${present.toLocaleString("en")} of ${USERS.toLocaleString("en")} users.`,
    "",
    ...perHundredThousand(s, rounds),
    "",
    "| round | load (1 min) | reference: straight to the core, by calls in flight (CPU) | re-apply (core ready → all back) | re-apply / fastest reference | SIGKILL → re-applied | CPU, kill → re-applied | users back |",
    "|---|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

/**
 * Issue 52 item 4: the agent's own cost per 100,000 users. Every figure of the run scaled to 100,000
 * users (× 100,000 / N; at N = 100,000 they are the measured ones), the agent path beside the direct
 * one (the panel's gRPC client on the same core) and the core's own AddUser time.
 */
function perHundredThousand(
  s: Pick<Awaited<ReturnType<typeof setup>>, "agentEmpty" | "directPush" | "agentPush">,
  rounds: Round[],
): string[] {
  const k = 100_000 / USERS;
  const per = (seconds: number) => `${(seconds * k).toFixed(2)} s`;
  const { directPush: d, agentPush: a } = s;
  const refOf = (r: Round) => r.references.reduce((x, y) => (y.ms < x.ms ? y : x));
  const med = (f: (r: Round) => number) => median(rounds.map(f));
  const ref = { ms: med((r) => refOf(r).ms), core: med((r) => refOf(r).coreCpu) };
  const replay = {
    ms: med((r) => r.replayMs),
    agent: med((r) => r.agentCpu),
    core: med((r) => r.coreCpu),
    panel: med((r) => r.panelCpu),
    rssBefore: med((r) => r.agentRssBeforeMB),
    rssPeak: med((r) => r.agentRssPeakMB),
  };
  const x = (n: number) => `**${n.toFixed(2)}×**`;
  const rssGrowth = ((a.agentRss.lastMB - s.agentEmpty.lastMB) * k).toFixed(1);
  return [
    `**The agent's own cost per 100,000 users** (issue 52; measured with ${USERS.toLocaleString("en")}${USERS === 100_000 ? "" : ", scaled"}; CPU seconds from /proc; the panel is this process, SQLite; re-apply figures are the median of ${rounds.length} round${rounds.length === 1 ? "" : "s"}):`,
    "",
    "| path | wall | panel CPU | agent CPU | core CPU | agent RSS |",
    "|---|---|---|---|---|---|",
    `| initial push, direct (the panel's gRPC client → the core) | ${per(d.ms / 1000)} | ${per(d.panelCpu)} | — (${per(d.agentCpu)}: its traffic reads) | ${per(d.coreCpu)} | — |`,
    `| initial push through the agent (panel → HTTPS → agent → gRPC → core, each call recorded on disk) | ${per(a.ms / 1000)} | ${per(a.panelCpu)} | ${per(a.agentCpu)} | ${per(a.coreCpu)} | ${mb(s.agentEmpty.lastMB)} without users → peak ${mb(a.agentRss.peakMB)}, ${mb(a.agentRss.lastMB)} at the end |`,
    `| re-apply after SIGKILL (the agent alone, from memory) | ${per(replay.ms / 1000)} | ${per(replay.panel)} (takes no part) | ${per(replay.agent)} (kill → re-applied) | ${per(replay.core)} (the new core's life) | ${mb(replay.rssBefore)} → peak ${mb(replay.rssPeak)} |`,
    `| the core's own AddUser (pre-encoded, straight to its API, faster of ${REFERENCE_CONCURRENCY.join(" and ")} in flight) | ${per(ref.ms / 1000)} | — | — | ${per(ref.core)} | — |`,
    "",
    `The agent's CPU by thread in the push through it: ${a.agentThreads}; in the last re-apply: ${rounds.at(-1)?.agentThreads ?? "—"}.`,
    "",
    `Ratios: initial push through the agent / direct: wall ${x(a.ms / d.ms)}, panel CPU ${x(a.panelCpu / d.panelCpu)}, panel + agent CPU / panel CPU direct ${x((a.panelCpu + a.agentCpu) / d.panelCpu)}; agent CPU / the core's CPU in the same push ${x(a.agentCpu / a.coreCpu)}; re-apply / the core's own AddUser time ${x(replay.ms / ref.ms)}, agent CPU in the re-apply / its wall ${x((replay.agent * 1000) / replay.ms)}. Agent RSS growth with the users: ${rssGrowth} MB per 100,000 (end of the push minus without users).`,
  ];
}

process.exitCode = await main().catch((error: unknown) => {
  if (interrupted.aborted) return 130;
  console.error(error);
  return 1;
});
