// `npm run bench:fleet [-- --users N --servers S --real R --dialects sqlite,postgres --smoke --write F]`
// (issue 52): a fleet of S V2Ray servers × 3 inbounds, N users spread over the servers (user i on
// every inbound of server i mod S: 3 grants each), the service running as `portcullis serve` from the
// bundle, alone in its process so its CPU and memory are its own (/proc/<pid>). R servers are real
// Debian v2ray cores; the others are stand-ins (bench/fleet/standins.ts, one child process) paced to
// the real core's AddUser, RemoveUser and QueryStats rates, measured at the start of this very run.
// Per dialect it measures, each against its reference from the same run:
//  - cold start: spawn → every core holds every user (stand-ins count what they hold; the real cores'
//    grants synced, then probed), against the cores' own time to add their users (per core, in parallel);
//    the API's p99 (user search, user, server) all along the cold start;
//  - one fleet-wide traffic poll: every stand-in answers its next QueryStats with traffic for every
//    user it holds; panel CPU and wall time from the first answer until users.used_bytes holds exactly
//    what was answered; rows written; database size and write rate;
//  - the lifecycle tick over the fleet's database (run from the benchmark, timed);
//  - one stand-in core restarted until it holds its users again, against its own AddUser time;
//  - panel RSS (peak and settled);
//  - after all that, a real v2ray client carries traffic for a sample of users of the real cores,
//    and the next poll counts it;
//  - PostgreSQL only: a second instance on the same database; every stand-in restarted and traffic
//    armed once more: each core must receive each user once (users sent by AddUser or inline = its grants) and the
//    traffic must be counted once (the sum exact).
import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import pg from "pg";
import pino from "pino";
import { loadConfig } from "../src/config/config.ts";
import { GrpcCoreClient } from "../src/cores/grpc-core-client.ts";
import { buildInbound, buildUser } from "../src/cores/inbound-builder/build.ts";
import type { BuiltUser } from "../src/cores/inbound-builder/built.ts";
import { withInlineUsers } from "../src/cores/inbound-builder/inline-users.ts";
import { createDeps, type Deps } from "../src/deps.ts";
import { newGrantRow } from "../src/features/access/grant-rows.ts";
import type { LinkParams } from "../src/features/inbounds/link-params.ts";
import { ConfigSchema as VlessInboundSchema } from "../src/gen/v2ray/proxy/vless_inbound_pb.ts";
import { ConfigSchema as VmessInboundSchema } from "../src/gen/v2ray/proxy/vmess_inbound_pb.ts";
import { eachWithWorkers } from "../src/lib/limiter.ts";
import { grantsOf, probeCore } from "../test/support/convergence.ts";
import { toV2rayOutbound } from "../test/support/link-client-configs.ts";
import { decodeLink } from "../test/support/link-decoder.ts";
import { freePort } from "../test/support/ports.ts";
import { kindTemplate } from "../test/support/provisioning.ts";
import {
  CleanupStack,
  fetchViaSocks,
  startHttpServer,
  startV2rayClient,
  startV2rayServer,
  type V2rayServer,
} from "../test/support/v2ray.ts";
import type { Ask, CoreCounts, FromStandins, Pacing, Served, ToStandins } from "./fleet/standins.ts";
import { readCpuSeconds } from "./lib/cpu.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { writeBetweenMarkers } from "./lib/markers.ts";
import { createScratchDatabase } from "./lib/pg-scratch.ts";
import { interrupted, type Pinned, startPinned, stop } from "./lib/processes.ts";
import { readPeakRssMB, readRssKiB } from "./lib/rss.ts";
import { summarize } from "./lib/stats.ts";
import { postgresWriter, sqliteWriter, userRow } from "./sub/seed.ts";
import { MALLOC_ENV, startArgs } from "./sub/service.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string" },
    servers: { type: "string" },
    real: { type: "string" },
    calibrate: { type: "string" },
    sample: { type: "string" },
    dialects: { type: "string", default: "sqlite,postgres" },
    smoke: { type: "boolean", default: false },
    "cpu-prof": { type: "string" },
    /** PORTCULLIS_RECONCILE_CONCURRENCY for the service (default: the service's own, 4). */
    concurrency: { type: "string" },
    /** Minutes the cold start may take before the run records what it reached (default 25). */
    "cold-deadline": { type: "string" },
    /** Minutes the poll's deltas may take to reach users.used_bytes (the fold; default 30). */
    "poll-deadline": { type: "string" },
    /** Seconds of the idle step (the service's CPU with nothing to do; default 10). */
    idle: { type: "string" },
    write: { type: "string" },
  },
});
const SMOKE = values.smoke;
const USERS = Number(values.users ?? (SMOKE ? 3000 : 1_000_000));
const SERVERS = Number(values.servers ?? (SMOKE ? 6 : 50));
const REAL = Number(values.real ?? 1);
const CALIBRATE = Number(values.calibrate ?? (SMOKE ? 3000 : 10_000));
const SAMPLE = Number(values.sample ?? (SMOKE ? 5 : 20));
const DIALECTS = values.dialects.split(",") as Dialect[];
const INBOUNDS_PER_SERVER = 3;
const ROOT = new URL("..", import.meta.url).pathname;
const SECRET_KEY = "00".repeat(32);
const ADMIN_PASSWORD = "bench-password";
const GIB = 1024 ** 3;
/** The service's own default intervals (config.ts), stated here for the report. */
const TRAFFIC_INTERVAL_MS = 10_000;
/** Generous, but every wait has one: a run that hangs fails with what it waited for. */
const COLD_START_DEADLINE_MS = Number(values["cold-deadline"] ?? 25) * 60_000;
const STEP_DEADLINE_MS = 10 * 60_000;
/** At 1,000,000 users the fold took over 10 min on a loaded machine (docs/benchmarks/fleet.md): measured, not cut off. */
const POLL_DEADLINE_MS = Number(values["poll-deadline"] ?? 30) * 60_000;
/** Longer than the traffic interval (10 s) takes the polls' share in evenly. */
const IDLE_MS = Number(values.idle ?? 10) * 1000;

type Dialect = "sqlite" | "postgres";
/** Three kinds V2Ray 4.34 serves without certificates: VLESS and VMess over TCP, VLESS over WebSocket. */
const KINDS = [
  { protocol: "vless", network: "tcp", tls: false },
  { protocol: "vmess", network: "tcp", tls: false },
  { protocol: "vless", network: "ws", tls: false },
] as const;

if (USERS < SERVERS || REAL > SERVERS || REAL < 1 || SERVERS - REAL < 1)
  throw new Error("need users ≥ servers and 1 ≤ real < servers");

const log = (text: string) => process.stderr.write(`  ${text}\n`);
const load = () => loadavg()[0]?.toFixed(2) ?? "?";
const ms = (value: number) => `${Math.round(value).toLocaleString("en")} ms`;
const s = (value: number) => `${(value / 1000).toFixed(1)} s`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const verdict = (ok: boolean) => (ok ? "met" : "not met");
/** The poll and memory goals are the full size's (1,000,000 users × 50 servers): smaller runs show the figure only. */
const AT_GOAL_SIZE = USERS >= 1_000_000 && SERVERS >= 50;
const sizedVerdict = (ok: boolean) => (AT_GOAL_SIZE ? verdict(ok) : "goal is at 10⁶ × 50");
/** Users on server k (user i is on server i mod S). */
const usersOn = (k: number) => Math.floor(USERS / SERVERS) + (k < USERS % SERVERS ? 1 : 0);

// ---------------------------------------------------------------------------------------------------
// Calibration: the real core's own rates, on this machine, now.

type Calibration = {
  addPerS: number;
  removePerS: number;
  /** Median latency of QueryStats("user>>>", reset) with CALIBRATE users on the core. */
  queryStatsMs: number;
  addInboundMs: number;
  /**
   * An AddInbound carrying CALIBRATE users inline, per protocol of the fleet: ms per user beyond the
   * empty AddInbound (timed at the client, its request guards included), and the whole call's time.
   */
  inline: Record<"vless" | "vmess", { perUserMs: number; totalMs: number }>;
  load: string;
};

async function calibrate(stack: CleanupStack): Promise<Calibration> {
  const atLoad = load();
  const core = await startV2rayServer(stack.add);
  const client = new GrpcCoreClient({ address: core.apiAddress, layout: "v2ray-4" });
  try {
    const settings = { clients: [], decryption: "none" };
    const addInboundTimes: number[] = [];
    const tags = ["cal-0", "cal-1", "cal-2"];
    for (const tag of tags) {
      const json = { tag, port: await freePort(), listen: "127.0.0.1", protocol: "vless", settings };
      const inbound = buildInbound(json, "v2ray");
      if (!inbound.ok) throw new Error(JSON.stringify(inbound.problems));
      const started = performance.now();
      await client.replaceInbound(inbound.value);
      addInboundTimes.push(performance.now() - started);
    }
    const users: BuiltUser[] = [];
    for (let i = 0; i < CALIBRATE; i++) {
      const user = buildUser("vless", "v2ray", { email: `cal-${i}`, credential: randomUUID() });
      if (!user.ok) throw new Error(JSON.stringify(user.problems));
      users.push(user.value);
    }
    // Warm-up on another inbound (channel, JIT), then the measured adds; 64 in flight, as the service.
    await eachWithWorkers(users.slice(0, 500), 64, (user) =>
      client.addUser({ tag: "cal-1", protocol: "vless" }, user),
    );
    let started = performance.now();
    await eachWithWorkers(users, 64, (user) => client.addUser({ tag: "cal-0", protocol: "vless" }, user));
    const addMs = performance.now() - started;
    const queryTimes: number[] = [];
    for (let i = 0; i < 20; i++) {
      started = performance.now();
      await client.queryStats("user>>>", true);
      queryTimes.push(performance.now() - started);
    }
    started = performance.now();
    await eachWithWorkers(users, 64, (user) => client.removeUser("cal-0", user.email));
    const removeMs = performance.now() - started;
    const addInboundMs = summarize(addInboundTimes).p50;
    const inline = {
      vless: await inlineCost(client, "vless", users, addInboundMs),
      vmess: await inlineCost(client, "vmess", undefined, addInboundMs),
    };
    const result = {
      addPerS: (CALIBRATE * 1000) / addMs,
      removePerS: (CALIBRATE * 1000) / removeMs,
      queryStatsMs: summarize(queryTimes).p50,
      addInboundMs,
      inline,
      load: `${atLoad}–${load()}`,
    };
    log(
      `real core: AddUser ${Math.round(result.addPerS)}/s, RemoveUser ${Math.round(result.removePerS)}/s, QueryStats ${result.queryStatsMs.toFixed(2)} ms, AddInbound ${result.addInboundMs.toFixed(2)} ms; AddInbound with ${CALIBRATE} users inline: VLESS ${inline.vless.totalMs.toFixed(0)} ms, VMess ${inline.vmess.totalMs.toFixed(0)} ms (load ${result.load})`,
    );
    return result;
  } finally {
    client.close();
    await core.kill("SIGKILL");
  }
}

/** One AddInbound carrying CALIBRATE users of `protocol` inline, timed on the real core. */
async function inlineCost(
  client: GrpcCoreClient,
  protocol: "vless" | "vmess",
  vlessUsers: BuiltUser[] | undefined,
  emptyMs: number,
): Promise<{ perUserMs: number; totalMs: number }> {
  const settings = protocol === "vless" ? { clients: [], decryption: "none" } : { clients: [] };
  const tag = `cal-inline-${protocol}`;
  const json = { tag, port: await freePort(), listen: "127.0.0.1", protocol, settings };
  const inbound = buildInbound(json, "v2ray");
  if (!inbound.ok) throw new Error(JSON.stringify(inbound.problems));
  const users =
    vlessUsers ??
    Array.from({ length: CALIBRATE }, (_, i) => {
      const user = buildUser(protocol, "v2ray", { email: `cal-${protocol}-${i}`, credential: randomUUID() });
      if (!user.ok) throw new Error(JSON.stringify(user.problems));
      return user.value;
    });
  const split = withInlineUsers(inbound.value, users, Number.POSITIVE_INFINITY);
  const started = performance.now();
  await client.replaceInbound(split.inbound);
  const totalMs = performance.now() - started;
  await client.removeInbound(tag);
  return { perUserMs: Math.max(0, totalMs - emptyMs) / CALIBRATE, totalMs };
}

/**
 * The real core's own time to take `users` users on each of the fleet's three inbounds (VLESS/TCP,
 * VMess/TCP, VLESS/WS) inline in one AddInbound each, one after another.
 */
function inlineReferenceMs(calibration: Calibration, users: number): number {
  const { vless, vmess } = calibration.inline;
  const perUser = 2 * vless.perUserMs + vmess.perUserMs;
  return INBOUNDS_PER_SERVER * calibration.addInboundMs + users * perUser;
}

// ---------------------------------------------------------------------------------------------------
// The stand-ins' child process.

type Standins = {
  child: ChildProcess;
  pid: number;
  ask(message: Ask): Promise<FromStandins>;
  counts(): Promise<CoreCounts[]>;
  served: Served[];
};

async function startStandins(stack: CleanupStack, ports: number[], pacing: Pacing): Promise<Standins> {
  const child = fork(join(ROOT, "bench/fleet/standins.ts"), [], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, STANDIN_PORTS: JSON.stringify(ports), STANDIN_PACING: JSON.stringify(pacing) },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  stack.add(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  const waiting = new Map<number, (message: FromStandins) => void>();
  const served: Served[] = [];
  let nextId = 1;
  const ready = new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`stand-ins exited with ${code}`)));
    child.on("message", (message: FromStandins) => {
      if ("ready" in message) resolve();
      else if ("event" in message) served.push(message.served);
      else waiting.get(message.id)?.(message);
    });
  });
  await withDeadline(ready, 120_000, "the stand-ins to listen");
  const ask = (message: Ask) => {
    const id = nextId++;
    return withDeadline(
      new Promise<FromStandins>((resolve) => {
        waiting.set(id, (answer) => {
          waiting.delete(id);
          resolve(answer);
        });
        child.send({ ...message, id } as ToStandins);
      }),
      60_000,
      `the stand-ins to answer ${message.cmd}`,
    );
  };
  return {
    child,
    pid: child.pid ?? -1,
    ask,
    counts: async () => {
      const answer = await ask({ cmd: "counts" });
      if (!("counts" in answer)) throw new Error("stand-ins: no counts");
      return answer.counts;
    },
    served,
  };
}

function withDeadline<T>(promise: Promise<T>, deadlineMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${deadlineMs} ms waiting for ${what}`)),
      deadlineMs,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function until<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  deadlineMs = STEP_DEADLINE_MS,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    interrupted.throwIfAborted();
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

// ---------------------------------------------------------------------------------------------------
// The fleet in the database: servers, inbounds through the services; users and grants in bulk.

type Fleet = {
  servers: { id: string; inbounds: { id: string; linkParams: LinkParams }[] }[];
  userIds: string[];
  seedS: number;
};

async function seedFleet(deps: Deps, dataDir: string, ports: number[]): Promise<Fleet> {
  const started = performance.now();
  const { templates, servers, inbounds } = deps.services;
  const templateIds: string[] = [];
  for (const kind of KINDS) templateIds.push((await templates.create(kindTemplate(kind) as never)).id);
  const fleet: Fleet = { servers: [], userIds: [], seedS: 0 };
  for (let k = 0; k < SERVERS; k++) {
    const server = await servers.create({
      name: `fleet-${String(k).padStart(3, "0")}`,
      hostname: "127.0.0.1",
      grpc_port: ports[k] as number,
    });
    const list: Fleet["servers"][number]["inbounds"] = [];
    for (const templateId of templateIds) {
      const created = await inbounds.create(server.id, { template_id: templateId, port: await freePort() });
      const row = await deps.database.db
        .selectFrom("server_inbounds")
        .select("link_params")
        .where("id", "=", created.id)
        .executeTakeFirstOrThrow();
      list.push({ id: created.id, linkParams: JSON.parse(row.link_params) as LinkParams });
    }
    fleet.servers.push({ id: server.id, inbounds: list });
  }
  const writer =
    deps.database.dialect === "sqlite" ? sqliteWriter(join(dataDir, "portcullis.db")) : postgresWriter(deps);
  const base = Date.UTC(2026, 0, 1);
  // PostgreSQL: the two big tables' secondary indexes are dropped for the seed and built once after it
  // (row by row into ~20 indexes, a trigram one among them, the seed ran at ~30,000 users a minute).
  const indexes = deps.database.dialect === "postgres" ? await dropSecondaryIndexes(deps) : [];
  try {
    for (let first = 0; first < USERS; first += 10_000) {
      interrupted.throwIfAborted();
      const rows = Array.from({ length: Math.min(10_000, USERS - first) }, (_, k) =>
        userRow(first + k, base),
      );
      const now = new Date(base).toISOString();
      const grants = rows.flatMap((user, k) => {
        const server = fleet.servers[(first + k) % SERVERS] as Fleet["servers"][number];
        return server.inbounds.map((inbound) =>
          newGrantRow(
            { id: inbound.id, server_id: server.id, link_params: inbound.linkParams },
            user.id,
            0,
            now,
            new Set(),
          ),
        );
      });
      await writer.write(rows, grants);
      for (const row of rows) fleet.userIds.push(row.id);
      if (first > 0 && first % 100_000 === 0) log(`${first.toLocaleString("en")} users…`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    await writer.close();
  }
  // Data limits, so the lifecycle tick has limits to check; the seed's change rows are history.
  const limits = `UPDATE users SET data_limit_bytes = ${10 * GIB}`;
  if (deps.database.dialect === "postgres") {
    await withoutStatementDeadline(deps, [
      limits,
      "DELETE FROM subscription_changes",
      ...indexes,
      "VACUUM ANALYZE users",
      "VACUUM ANALYZE user_access",
    ]);
  } else {
    await sql.raw(limits).execute(deps.database.db);
    await deps.database.db.deleteFrom("subscription_changes").execute();
    await sql`ANALYZE`.execute(deps.database.db);
  }
  fleet.seedS = (performance.now() - started) / 1000;
  return fleet;
}

/**
 * PostgreSQL: statements run on a connection of their own, without the service's 30 s statement
 * deadline (db/connection.ts): at 1,000,000 users a whole-table UPDATE or an index build outlasts it.
 */
async function withoutStatementDeadline(deps: Deps, statements: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: deps.config.databaseUrl });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * Drops the secondary indexes of `users` and `user_access` (none that backs a primary key, unique or
 * other constraint) and returns the statements that build them again, as they were.
 */
async function dropSecondaryIndexes(deps: Deps): Promise<string[]> {
  const { rows } = await sql<{ name: string; definition: string }>`
    SELECT quote_ident(i.schemaname) || '.' || quote_ident(i.indexname) AS name, i.indexdef AS definition
    FROM pg_indexes i
    WHERE i.schemaname = current_schema() AND i.tablename IN ('users', 'user_access')
      AND NOT EXISTS (
        SELECT 1 FROM pg_constraint c
        WHERE c.conindid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass
      )`.execute(deps.database.db);
  await withoutStatementDeadline(
    deps,
    rows.map((row) => `DROP INDEX ${row.name}`),
  );
  return rows.map((row) => row.definition);
}

// ---------------------------------------------------------------------------------------------------
// The service, as `npm start` runs it, from the bundle.

/** A file per service started, in the system's temporary directory; its path is printed. */
function serviceLog(): string {
  const path = join(tmpdir(), `portcullis-bench-fleet-service-${process.pid}-${Date.now()}.log`);
  console.log(`  the service's log (warnings and errors): ${path}`);
  return path;
}

type Panel = Pinned & { baseUrl: string; token: string; startedAt: number; healthAt: number };

async function startPanel(
  stack: CleanupStack,
  dataDir: string,
  databaseUrl: string | undefined,
  profDir: string | undefined,
): Promise<Panel> {
  const port = await freePort();
  const startedAt = Date.now();
  const nodeArgs = profDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profDir}`];
  const proc = startPinned(
    process.execPath,
    [...nodeArgs, ...startArgs(join(ROOT, "dist/portcullis.mjs")), "serve"],
    {
      cwd: ROOT,
      // The service's warnings and errors (a failed poll, a core that did not answer) outlive the run.
      stdoutFile: serviceLog(),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        HOST: "127.0.0.1",
        PORT: String(port),
        DATA_DIR: dataDir,
        ...(databaseUrl === undefined ? {} : { DATABASE_URL: databaseUrl }),
        LOG_LEVEL: "warn",
        ...MALLOC_ENV,
        PORTCULLIS_ADMIN_PASSWORD: ADMIN_PASSWORD,
        PORTCULLIS_SECRET_KEY: SECRET_KEY,
        ...(values.concurrency === undefined ? {} : { PORTCULLIS_RECONCILE_CONCURRENCY: values.concurrency }),
      },
    },
  );
  // SIGTERM first: a profile is written on a clean exit only.
  stack.add(() => stop(proc, 30_000));
  const baseUrl = `http://127.0.0.1:${port}`;
  await until(
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`the service exited:\n${proc.stderr()}`);
      return fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => (r.ok ? true : undefined),
        () => undefined,
      );
    },
    "the service to answer /health",
    COLD_START_DEADLINE_MS,
    50,
  );
  const healthAt = Date.now();
  const login = await fetch(`${baseUrl}/api/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "admin", password: ADMIN_PASSWORD }),
    signal: AbortSignal.timeout(60_000),
  });
  if (!login.ok) throw new Error(`login: ${login.status}`);
  const token = ((await login.json()) as { access_token: string }).access_token;
  return { ...proc, baseUrl, token, startedAt, healthAt };
}

/** CPU seconds of a process sampled every 50 ms, with the wall clock, to cut windows afterwards. */
function cpuTrace(pid: number) {
  const samples: [number, number][] = [];
  const take = () => {
    try {
      samples.push([Date.now(), readCpuSeconds(pid)]);
    } catch {
      // exited
    }
  };
  take();
  const timer = setInterval(take, 50);
  return {
    /** CPU seconds spent between the last sample at or before `from` and the first at or after `to`. */
    between(from: number, to: number): number {
      take();
      const before = [...samples].reverse().find(([at]) => at <= from) ?? samples[0];
      const after = samples.find(([at]) => at >= to) ?? samples.at(-1);
      return (after?.[1] ?? 0) - (before?.[1] ?? 0);
    },
    stop: () => clearInterval(timer),
  };
}

// ---------------------------------------------------------------------------------------------------
// One dialect.

type Result = {
  dialect: Dialect;
  seedS: number;
  load: Record<string, string>;
  coldMs: number;
  coldFromHealthMs: number;
  coldReferenceMs: number;
  /** The cores' own time with every user inline in AddInbound (shown beside the reference). */
  coldInlineMs: number;
  coldCpuS: number;
  api: Record<string, { n: number; p50: number; p99: number; max: number; failed: number }>;
  poll: {
    cpuMs: number;
    wallMs: number;
    readMs: number;
    users: number;
    rows: number;
    bytes: number;
    /** Bytes the stand-ins sent that were not in the totals when the poll's deadline passed (0: all). */
    missingBytes: number;
    /** First answer → every delta durable (journaled or folded); the panel's CPU in that window. */
    writtenMs: number;
    writtenCpuMs: number;
  };
  idleCpuMsPerS: number;
  tickMs: number;
  restart: { ms: number; fromFirstCallMs: number; referenceMs: number; inlineMs: number; grants: number };
  rss: { afterColdMB: number; afterPollMB: number; peakMB: number };
  db: { bytes: number; writeRowsPerS: number };
  real: { sample: number; carried: number; grantsProbed: number; present: number; counted: number };
  /** Set when the cold start did not converge within the deadline: what was reached. */
  notConverged?: string;
  two?: {
    /** Servers held by the first + the second instance once the second got its share. */
    split: string;
    splitMs: number;
    /** Servers that changed hands after the split, during the step (0: a stable split). */
    moved: number;
    restartedBy: { first: number; second: number };
    polledBy: { first: number; second: number };
    addUserCalls: number;
    expected: number;
    restarted: number;
    sumExact: boolean;
    coldMs: number;
    served: number;
  };
};

function partialResult(dialect: Dialect, seedS: number, load: Record<string, string>): Result {
  const nan = Number.NaN;
  return {
    ...{
      dialect,
      seedS,
      load,
      coldMs: nan,
      coldFromHealthMs: nan,
      coldReferenceMs: nan,
      coldInlineMs: nan,
      coldCpuS: nan,
      api: {},
    },
    poll: {
      ...{ cpuMs: nan, wallMs: nan, readMs: nan, users: nan, rows: nan, bytes: nan },
      ...{ missingBytes: nan, writtenMs: nan, writtenCpuMs: nan },
    },
    ...{ idleCpuMsPerS: nan, tickMs: nan },
    restart: { ms: nan, fromFirstCallMs: nan, referenceMs: nan, inlineMs: nan, grants: nan },
    rss: { afterColdMB: nan, afterPollMB: nan, peakMB: nan },
    db: { bytes: nan, writeRowsPerS: nan },
    real: { sample: nan, carried: nan, grantsProbed: nan, present: nan, counted: nan },
  };
}

async function runDialect(dialect: Dialect, calibration: Calibration): Promise<Result> {
  const stack = new CleanupStack();
  const loads: Record<string, string> = { start: load() };
  try {
    const dataDir = mkdtempSync(join(tmpdir(), "portcullis-bench-fleet-"));
    stack.add(() => rmSync(dataDir, { recursive: true, force: true }));
    let databaseUrl: string | undefined;
    if (dialect === "postgres") {
      const scratch = await createScratchDatabase("portcullis_bench_fleet");
      stack.add(() => scratch.drop());
      databaseUrl = scratch.url;
    }
    const config = loadConfig({
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      PORTCULLIS_SECRET_KEY: SECRET_KEY,
      PORTCULLIS_CORE_TIMEOUT_MS: "1000",
    });
    const deps = await createDeps(config, { logger: pino({ level: "silent" }) });
    stack.add(() => deps.close());
    const db = deps.database.db;

    // Ports: the real cores first (they pick theirs), the stand-ins' drawn now and bound after the seed.
    const realCores: V2rayServer[] = [];
    for (let k = 0; k < REAL; k++) realCores.push(await startV2rayServer(stack.add));
    const standinPorts: number[] = [];
    for (let k = REAL; k < SERVERS; k++) standinPorts.push(await freePort());
    const ports = [...realCores.map((core) => core.apiPort), ...standinPorts];
    // The cores are down while the fleet is seeded, so nothing is pushed: every grant starts pending.
    const placeholder = await Promise.all(ports.map(() => freePort()));
    log(
      `${dialect}: seeding ${USERS.toLocaleString("en")} users on ${SERVERS} servers × ${INBOUNDS_PER_SERVER} inbounds…`,
    );
    const fleet = await seedFleet(deps, dataDir, placeholder);
    for (const [k, server] of fleet.servers.entries())
      await db
        .updateTable("servers")
        .set({ grpc_port: ports[k] as number })
        .where("id", "=", server.id)
        .execute();
    log(`seeded in ${fleet.seedS.toFixed(1)} s`);

    const pacing: Pacing = {
      addUserMs: 1000 / calibration.addPerS,
      removeUserMs: 1000 / calibration.removePerS,
      queryStatsMs: calibration.queryStatsMs,
      otherMs: calibration.addInboundMs,
      inlineUserMs: {
        [VlessInboundSchema.typeName]: calibration.inline.vless.perUserMs,
        [VmessInboundSchema.typeName]: calibration.inline.vmess.perUserMs,
      },
    };
    const standins = await startStandins(stack, standinPorts, pacing);
    const expected = standinPorts.map((_, j) => usersOn(REAL + j) * INBOUNDS_PER_SERVER);
    const realServerIds = fleet.servers.slice(0, REAL).map((server) => server.id);

    // ---- cold start
    loads.cold = load();
    const profDir = values["cpu-prof"] === undefined ? undefined : join(values["cpu-prof"], dialect);
    if (profDir !== undefined) mkdirSync(profDir, { recursive: true });
    const panel = await startPanel(stack, dataDir, databaseUrl, profDir);
    const cpu = cpuTrace(panel.pid);
    stack.add(() => cpu.stop());
    const api = apiProbe(panel, fleet);
    const convergedAt: number[] = new Array(SERVERS).fill(0);
    let heldAtEnd = 0;
    const converged = await until(
      async () => {
        const counts = await standins.counts();
        const now = Date.now();
        heldAtEnd = counts.reduce((sum, c) => sum + c.users, 0);
        counts.forEach((c, j) => {
          if (c.users === expected[j] && convergedAt[REAL + j] === 0) convergedAt[REAL + j] = now;
        });
        for (const [k, id] of realServerIds.entries()) {
          if (convergedAt[k] !== 0) continue;
          const open = await db
            .selectFrom("user_access")
            .select(db.fn.countAll<number>().as("n"))
            .where("server_id", "=", id)
            .where("sync_state", "!=", "synced")
            .executeTakeFirstOrThrow();
          if (Number(open.n) === 0) convergedAt[k] = now;
        }
        return convergedAt.every((at) => at !== 0) ? true : undefined;
      },
      "every core to hold every user",
      COLD_START_DEADLINE_MS,
      200,
    ).catch(() => false);
    const coldEnd = converged ? Math.max(...convergedAt) : Date.now();
    const apiTimes = await api.stop();
    const coldCpuS = cpu.between(panel.startedAt, coldEnd);
    const afterColdMB = ((readRssKiB(panel.pid) ?? 0) * 1024) / 1e6;
    const maxGrants = Math.max(
      ...Array.from({ length: SERVERS }, (_, k) => usersOn(k) * INBOUNDS_PER_SERVER),
    );
    const coldReferenceMs =
      (maxGrants * 1000) / calibration.addPerS + INBOUNDS_PER_SERVER * calibration.addInboundMs;
    const coldInlineMs = inlineReferenceMs(calibration, maxGrants / INBOUNDS_PER_SERVER);
    if (!converged) {
      // What was reached is the result: the rest of the run needs a converged fleet.
      const errors = await db
        .selectFrom("servers")
        .select("last_error")
        .where("last_error", "is not", null)
        .execute();
      const firstError = errors[0]?.last_error?.replace(/127\.0\.0\.1:\d+/, "127.0.0.1:…") ?? "none";
      const standinGrants = expected.reduce((a, b) => a + b, 0);
      const notConverged = `not converged after ${s(coldEnd - panel.startedAt)}: ${convergedAt.filter((at) => at !== 0).length} of ${SERVERS} cores done, the stand-ins held ${heldAtEnd.toLocaleString("en")} of ${standinGrants.toLocaleString("en")} grants; ${errors.length} server(s) with an error, e.g. "${firstError}"`;
      log(notConverged);
      return {
        ...partialResult(dialect, fleet.seedS, loads),
        coldMs: coldEnd - panel.startedAt,
        coldFromHealthMs: coldEnd - panel.healthAt,
        coldReferenceMs,
        coldInlineMs,
        coldCpuS,
        api: apiTimes,
        rss: { afterColdMB, afterPollMB: Number.NaN, peakMB: readPeakRssMB(panel.pid) ?? Number.NaN },
        notConverged,
      };
    }
    log(
      `cold start: ${s(coldEnd - panel.startedAt)} from spawn (${s(coldEnd - panel.healthAt)} from /health), reference ${s(coldReferenceMs)} (the cores' own inline AddInbound ${s(coldInlineMs)}); panel CPU ${coldCpuS.toFixed(1)} s`,
    );
    log(
      `  each core full, from /health (real cores first): ${convergedAt.map((at) => s(at - panel.healthAt)).join(", ")}`,
    );
    // The real cores: what the database says synced is on the core (probed: AddUser answers "exists").
    let grantsProbed = 0;
    let present = 0;
    for (const [k, core] of realCores.entries()) {
      const grants = await grantsOf(deps, realServerIds[k] as string);
      const probe = await probeCore(core.apiAddress, grants);
      grantsProbed += grants.length;
      present += probe.present.length;
    }
    if (present !== grantsProbed) throw new Error(`real cores: ${grantsProbed - present} grants missing`);

    // ---- idle cost (reconcile ticks and empty polls), --idle seconds
    const idleFrom = Date.now();
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const idleTo = Date.now();
    const idleCpuMsPerS = (cpu.between(idleFrom, idleTo) * 1000) / ((idleTo - idleFrom) / 1000);
    log(
      `idle: ${idleCpuMsPerS.toFixed(0)} ms/s of panel CPU, ${s(idleFrom - panel.startedAt)}–${s(idleTo - panel.startedAt)} from spawn (load ${load()})`,
    );

    // ---- one fleet-wide traffic poll
    loads.poll = load();
    const sumUsed = async () =>
      Number(
        (await sql<{ n: string }>`SELECT coalesce(sum(used_bytes), 0) AS n FROM users`.execute(db)).rows[0]
          ?.n,
      );
    const usageRows = async () => {
      let n = 0;
      for (const table of [
        "user_usage_hourly",
        "user_usage_daily",
        "server_usage_hourly",
        "server_usage_daily",
      ]) {
        n += Number(
          (await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(table)}`.execute(db)).rows[0]?.n,
        );
      }
      return n;
    };
    // The bytes in the totals plus those journaled and not folded yet, in one snapshot: the poll's
    // deltas are durable (written) once this holds them all, before the fold brings them into the totals.
    const sumWritten = () =>
      db
        .transaction()
        .setIsolationLevel("repeatable read")
        .execute(async (trx) => {
          const used = Number(
            (await sql<{ n: string }>`SELECT coalesce(sum(used_bytes), 0) AS n FROM users`.execute(trx))
              .rows[0]?.n,
          );
          let journaled = 0;
          for (const row of await trx.selectFrom("traffic_journal").select("deltas").execute()) {
            const parsed = JSON.parse(row.deltas) as { users: [string, number | string, number | string][] };
            for (const [, up, down] of parsed.users) journaled += Number(up) + Number(down);
          }
          return used + journaled;
        });
    const baseline = await sumUsed();
    const rowsBefore = await usageRows();
    standins.served.length = 0;
    await standins.ask({ cmd: "arm" });
    const all = await until(
      async () => (standins.served.length === standinPorts.length ? [...standins.served] : undefined),
      "every stand-in to be polled",
      STEP_DEADLINE_MS,
      20,
    );
    const bytes = all.reduce((sum, x) => sum + x.bytes, 0);
    const pollUsers = all.reduce((sum, x) => sum + x.users, 0);
    // Written: journaled or already folded. A probe reads the whole journal in one snapshot (about a
    // second at 1,000,000 users), so probes are a second apart: back to back, a snapshot was open
    // nearly all the time and SQLite's WAL could not be checkpointed (it grew to GBs and slowed the
    // fold it measures). The time is that coarse. Missed within the poll's deadline: NaN.
    const writtenAt = await until(
      async () => ((await sumWritten()) >= baseline + bytes ? Date.now() : undefined),
      "the poll's deltas written (journaled or folded)",
      POLL_DEADLINE_MS,
      1000,
    ).catch((error: unknown) => {
      if (interrupted.aborted || !String(error).includes("timed out")) throw error;
      return Number.NaN;
    });
    // A poll that never brings every byte in is recorded (what was missing) and the run goes on to
    // the lifecycle, restart and real-client steps: a full-size run always ends with its figures.
    let missingBytes = 0;
    const endAt = await until(
      async () => {
        const now = Date.now();
        const sum = await sumUsed();
        if (sum > baseline + bytes) throw new Error(`counted ${sum - baseline - bytes} bytes too many`);
        return sum === baseline + bytes ? now : undefined;
      },
      "the poll's deltas in users.used_bytes",
      POLL_DEADLINE_MS,
      20,
    ).catch(async (error: unknown) => {
      if (interrupted.aborted || !String(error).includes("timed out")) throw error;
      missingBytes = baseline + bytes - (await sumUsed());
      log(
        `poll: ${missingBytes} of ${bytes} bytes not counted within ${POLL_DEADLINE_MS / 60_000} min; going on`,
      );
      return Date.now();
    });
    const firstAt = Math.min(...all.map((x) => x.at)) - pacing.queryStatsMs;
    const lastServed = Math.max(...all.map((x) => x.at));
    const pollCpuS = cpu.between(firstAt, endAt);
    const rows = (await usageRows()) - rowsBefore + pollUsers;
    const poll = {
      cpuMs: pollCpuS * 1000,
      wallMs: endAt - firstAt,
      writtenCpuMs: Number.isNaN(writtenAt) ? Number.NaN : cpu.between(firstAt, writtenAt) * 1000,
      writtenMs: writtenAt - firstAt,
      readMs: lastServed - firstAt,
      users: pollUsers,
      rows,
      bytes,
      missingBytes,
    };
    const afterPollMB = ((readRssKiB(panel.pid) ?? 0) * 1024) / 1e6;
    log(
      `poll: written in ${ms(poll.writtenMs)} (${ms(poll.writtenCpuMs)} CPU); in the totals in ${ms(poll.wallMs)} (${ms(poll.cpuMs)} CPU; reads ${ms(poll.readMs)}), ${rows} rows`,
    );

    // ---- the lifecycle tick over this database
    loads.tick = load();
    // The panel's fold may hold SQLite's write lock longer than the busy timeout on a loaded machine
    // (database_unavailable): the tick is tried again, and the try that went through is timed.
    let tickMs = Number.NaN;
    await until(
      async () => {
        const tickStarted = performance.now();
        try {
          await deps.services.lifecycle.tick();
        } catch (error) {
          // SQLite busy past its timeout; PostgreSQL: the tick's statement waited on the fold's row
          // locks past the service's 30 s statement deadline (57014), as at 1,000,000 users under load.
          const code = (error as { code?: string }).code;
          if (code === "database_unavailable" || code === "57014") return undefined;
          throw error;
        }
        tickMs = performance.now() - tickStarted;
        return true;
      },
      "the lifecycle tick to get the database",
      STEP_DEADLINE_MS,
      200,
    );
    log(`lifecycle tick: ${ms(tickMs)}`);

    // ---- one core restarted
    loads.restart = load();
    const before = (await standins.counts())[0]?.calls.AddInbound ?? 0;
    const restartAt = Date.now();
    await standins.ask({ cmd: "restart", core: 0 });
    let firstCallAt = 0;
    const restartedAt = await until(
      async () => {
        const c = (await standins.counts())[0];
        if (firstCallAt === 0 && (c?.calls.AddInbound ?? 0) > before) firstCallAt = Date.now();
        return c?.users === expected[0] ? Date.now() : undefined;
      },
      "the restarted core to hold its users",
      STEP_DEADLINE_MS,
      50,
    );
    const restartGrants = expected[0] as number;
    const restart = {
      ms: restartedAt - restartAt,
      fromFirstCallMs: restartedAt - firstCallAt,
      referenceMs:
        (restartGrants * 1000) / calibration.addPerS + INBOUNDS_PER_SERVER * calibration.addInboundMs,
      inlineMs: inlineReferenceMs(calibration, restartGrants / INBOUNDS_PER_SERVER),
      grants: restartGrants,
    };
    log(
      `restart: ${s(restart.ms)} (${s(restart.fromFirstCallMs)} from the first call), reference ${s(restart.referenceMs)} (inline AddInbound ${s(restart.inlineMs)})`,
    );

    // ---- a real client through the real cores, then the next poll counts it
    loads.real = load();
    const real = { ...(await carryReal(stack, deps, fleet, panel)), grantsProbed, present };

    const dbBytes =
      dialect === "postgres"
        ? Number(
            (await sql<{ n: string }>`SELECT pg_database_size(current_database()) AS n`.execute(db)).rows[0]
              ?.n,
          )
        : ["portcullis.db", "portcullis.db-wal"].reduce(
            (sum, f) => sum + (existsSync(join(dataDir, f)) ? statSync(join(dataDir, f)).size : 0),
            0,
          );
    const peakMB = readPeakRssMB(panel.pid) ?? Number.NaN;

    // ---- PostgreSQL: a second instance on the same database, sharing the fleet with the first
    let two: Result["two"];
    if (dialect === "postgres") {
      loads.two = load();
      const holders = async () =>
        new Map(
          (await db.selectFrom("server_leases").select(["server_id", "holder"]).execute()).map((r) => [
            r.server_id,
            r.holder,
          ]),
        );
      const joinAt = Date.now();
      const second = await startPanel(stack, dataDir, databaseUrl, undefined);
      // The first hands the second its share (features/sync/shares.ts) once it sees its heartbeat.
      const shared = await until(
        async () => {
          const held = await holders();
          return held.size === SERVERS && new Set(held.values()).size === 2 ? held : undefined;
        },
        "the second instance to get its share of the servers",
        STEP_DEADLINE_MS,
        100,
      );
      const splitMs = Date.now() - joinAt;
      const pidOf = (holder: string | undefined) => Number(holder?.split(":")[1]);
      const who = (serverId: string) => (pidOf(shared.get(serverId)) === second.pid ? "second" : "first");
      const standinServer = (j: number) => fleet.servers[REAL + j]?.id ?? "";
      const tally = (ids: string[]) => {
        const byInstance = { first: 0, second: 0 };
        for (const id of ids) byInstance[who(id)] += 1;
        return byInstance;
      };
      const split = tally(fleet.servers.map((server) => server.id));
      await standins.ask({ cmd: "reset-calls" });
      const startAll = Date.now();
      // As many stand-ins as the service reconciles at once (its default 4), taken from both
      // instances' shares in turn: one wave, a bounded wait, and work for each instance.
      const wave = Math.min(standinPorts.length, Number(values.concurrency ?? 4));
      const byHolder = (name: string) =>
        standinPorts.map((_, j) => j).filter((j) => who(standinServer(j)) === name);
      const [ofFirst, ofSecond] = [byHolder("first"), byHolder("second")];
      const chosen: number[] = [];
      for (let k = 0; chosen.length < wave && k < standinPorts.length; k++) {
        for (const list of [ofFirst, ofSecond]) {
          const j = list[k];
          if (j !== undefined && chosen.length < wave) chosen.push(j);
        }
      }
      for (const j of chosen) await standins.ask({ cmd: "restart", core: j });
      await until(
        async () => ((await standins.counts()).every((c, j) => c.users === expected[j]) ? true : undefined),
        "the restarted stand-ins to hold their users (two instances)",
        COLD_START_DEADLINE_MS,
        200,
      );
      const coldMs = Date.now() - startAll;
      const base2 = await sumUsed();
      standins.served.length = 0;
      await standins.ask({ cmd: "arm" });
      const served = await until(
        async () => (standins.served.length === standinPorts.length ? [...standins.served] : undefined),
        "every stand-in to be polled (two instances)",
      );
      const bytes2 = served.reduce((sum, x) => sum + x.bytes, 0);
      await until(
        async () => ((await sumUsed()) >= base2 + bytes2 ? true : undefined),
        "the deltas (two instances)",
      );
      // One interval more: a second count of the same bytes would show now.
      await new Promise((resolve) => setTimeout(resolve, TRAFFIC_INTERVAL_MS + 2000));
      const sumExact = (await sumUsed()) === base2 + bytes2;
      const counts = await standins.counts();
      // Users sent: by AddUser or inline in an AddInbound (a full apply's).
      const addUserCalls = counts.reduce(
        (sum, c) => sum + (c.calls.AddUser ?? 0) + (c.calls.InlineUsers ?? 0),
        0,
      );
      const expectedCalls = chosen.reduce((sum, j) => sum + (expected[j] ?? 0), 0);
      const after = await holders();
      const moved = [...shared].filter(([id, holder]) => after.get(id) !== holder).length;
      two = {
        split: `${split.first} + ${split.second}`,
        splitMs,
        moved,
        restartedBy: tally(chosen.map(standinServer)),
        polledBy: tally(served.map((x) => standinServer(x.core))),
        addUserCalls,
        expected: expectedCalls,
        restarted: chosen.length,
        sumExact,
        coldMs,
        served: served.length,
      };
      log(
        `two instances: servers ${two.split} (split ${s(splitMs)} after the second started, ${moved} moved since), restarted ${JSON.stringify(two.restartedBy)}, polled ${JSON.stringify(two.polledBy)}, users sent ${addUserCalls} for ${two.expected} grants, sum exact: ${sumExact}`,
      );
      await stop(second, 30_000);
    }
    loads.end = load();
    return {
      dialect,
      seedS: fleet.seedS,
      load: loads,
      coldMs: coldEnd - panel.startedAt,
      coldFromHealthMs: coldEnd - panel.healthAt,
      coldReferenceMs,
      coldInlineMs,
      coldCpuS,
      api: apiTimes,
      poll,
      idleCpuMsPerS,
      tickMs,
      restart,
      rss: { afterColdMB, afterPollMB, peakMB },
      db: { bytes: dbBytes, writeRowsPerS: (poll.rows * 1000) / Math.max(1, poll.wallMs - poll.readMs) },
      real,
      ...(two === undefined ? {} : { two }),
    };
  } finally {
    await stack.run();
  }
}

/**
 * User search, a user, a server, one after another until stopped: latencies in ms by kind. A call
 * that fails (an error status, a reset connection, no answer within 60 s) is counted, not timed.
 */
function apiProbe(panel: Panel, fleet: Fleet) {
  const times: Record<string, number[]> = { "user search": [], user: [], server: [] };
  let failed = 0;
  let running = true;
  const headers = { authorization: `Bearer ${panel.token}` };
  const call = async (kind: string, path: string) => {
    const started = performance.now();
    try {
      const res = await fetch(`${panel.baseUrl}${path}`, { headers, signal: AbortSignal.timeout(60_000) });
      await res.arrayBuffer();
      if (res.ok) times[kind]?.push(performance.now() - started);
      else failed++;
    } catch {
      failed++;
    }
  };
  const loop = (async () => {
    for (let i = 0; running && !interrupted.aborted; i++) {
      const n = (i * 7919) % USERS;
      await call(
        "user search",
        `/api/users/search?q=${encodeURIComponent(`user-${String(n).padStart(6, "0")}`)}`,
      );
      await call("user", `/api/users/${fleet.userIds[n]}`);
      await call("server", `/api/servers/${fleet.servers[i % SERVERS]?.id}`);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return Object.fromEntries(
        Object.entries(times).map(([kind, list]) => [
          kind,
          { ...summarize(list), max: Math.max(...list), failed: kind === "user search" ? failed : 0 },
        ]),
      );
    },
  };
}

/** SAMPLE users of the first real core: each of their links through one real v2ray client. */
async function carryReal(
  stack: CleanupStack,
  deps: Deps,
  fleet: Fleet,
  panel: Panel,
): Promise<Result["real"]> {
  const server = fleet.servers[0] as Fleet["servers"][number];
  const userIds = Array.from({ length: SAMPLE }, (_, i) => fleet.userIds[i * SERVERS] as string);
  const ports = await Promise.all(userIds.flatMap(() => server.inbounds.map(() => freePort())));
  const inbounds = [];
  const outbounds = [];
  const rules = [];
  let index = 0;
  for (const userId of userIds) {
    for (const inbound of server.inbounds) {
      const config = await deps.services.access.userInboundConfig(userId, inbound.id);
      outbounds.push(toV2rayOutbound(decodeLink(config.uri), { tag: `out-${index}` }));
      inbounds.push({
        tag: `in-${index}`,
        listen: "127.0.0.1",
        port: ports[index],
        protocol: "socks",
        settings: { auth: "noauth" },
      });
      rules.push({ type: "field", inboundTag: [`in-${index}`], outboundTag: `out-${index}` });
      index++;
    }
  }
  await startV2rayClient(
    stack.add,
    { log: { loglevel: "warning" }, inbounds, outbounds, routing: { rules } },
    ports,
  );
  const body = Buffer.alloc(256 * 1024, 7);
  const httpPort = await startHttpServer(stack.add, body);
  const usedOf = async () =>
    (
      await deps.database.db
        .selectFrom("users")
        .select(["id", "used_bytes"])
        .where("id", "in", userIds)
        .execute()
    ).reduce((map, row) => map.set(row.id, Number(row.used_bytes)), new Map<string, number>());
  const before = await usedOf();
  const results = await Promise.all(
    ports.map(async (port) => {
      try {
        const res = await fetchViaSocks(port, { port: httpPort, path: "/" }, 15_000);
        return res.status === 200 && res.body.equals(body);
      } catch {
        return false;
      }
    }),
  );
  const carried = results.filter(Boolean).length;
  log(
    `real client: ${carried} of ${ports.length} links carried ${body.length} bytes (panel pid ${panel.pid})`,
  );
  // The next traffic poll reads the real core's counters: every sampled user's usage grows.
  const counted = await until(
    async () => {
      const after = await usedOf();
      const grown = userIds.filter((id) => (after.get(id) ?? 0) >= (before.get(id) ?? 0) + body.length);
      return grown.length === userIds.length ? grown.length : undefined;
    },
    "the real traffic to be counted",
    4 * TRAFFIC_INTERVAL_MS,
    250,
  ).catch(() => 0);
  return { sample: ports.length, carried, grantsProbed: 0, present: 0, counted };
}

// ---------------------------------------------------------------------------------------------------
// Report.

function report(calibration: Calibration, results: Result[], machine: string[], startedAt: string): string {
  const perServer = Math.floor(USERS / SERVERS);
  const head = [
    `Run of ${startedAt}: \`npm run bench:fleet${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}\``,
    "",
    ...machine.map((line) => `- ${line}`),
    `- fleet: ${USERS.toLocaleString("en")} users over ${SERVERS} servers × ${INBOUNDS_PER_SERVER} inbounds (VLESS/TCP, VMess/TCP, VLESS/WS), user i on every inbound of server i mod ${SERVERS}: ${perServer.toLocaleString("en")} users and ${(perServer * INBOUNDS_PER_SERVER).toLocaleString("en")} grants per core; ${REAL} server(s) on real Debian v2ray 4.34 cores, ${SERVERS - REAL} on stand-ins in one child process`,
    `- the real core, measured at the start of this run (${CALIBRATE.toLocaleString("en")} users, 64 in flight, load ${calibration.load}): AddUser ${Math.round(calibration.addPerS).toLocaleString("en")}/s, RemoveUser ${Math.round(calibration.removePerS).toLocaleString("en")}/s, QueryStats ${calibration.queryStatsMs.toFixed(2)} ms (median of 20, no user counters yet), AddInbound ${calibration.addInboundMs.toFixed(2)} ms, AddInbound with ${CALIBRATE.toLocaleString("en")} users inline ${calibration.inline.vless.totalMs.toFixed(0)} ms (VLESS) and ${calibration.inline.vmess.totalMs.toFixed(0)} ms (VMess), i.e. ${(calibration.inline.vless.perUserMs * 1000).toFixed(0)} and ${(calibration.inline.vmess.perUserMs * 1000).toFixed(0)} µs per user; each stand-in serves its calls one after another at these costs`,
    `- the service: \`portcullis serve\` from the bundle with npm start's flags, default intervals (reconcile 3 s, traffic ${TRAFFIC_INTERVAL_MS / 1000} s), ${values.concurrency ?? 4} servers reconciled at once${values.concurrency === undefined ? " (the default)" : ""}; CPU from /proc/<pid>/stat, RSS from /proc/<pid>/status`,
    "",
  ];
  const rows: string[] = [
    `| figure | goal | ${results.map((r) => r.dialect).join(" | ")} |`,
    `|---|---|${results.map(() => "---|").join("")}`,
  ];
  /** Rows that need a converged fleet: a run that did not converge shows why instead. */
  const after = (cell: (r: Result) => string) => (r: Result) =>
    r.notConverged === undefined ? cell(r) : "– (no converged fleet)";
  const row = (figure: string, goal: string, cell: (r: Result) => string) =>
    rows.push(`| ${figure} | ${goal} | ${results.map(cell).join(" | ")} |`);
  row(
    "load average (start; cold start; poll; end)",
    "–",
    (r) => `${r.load.start}; ${r.load.cold}; ${r.load.poll}; ${r.load.end}`,
  );
  row("seed (users and grants written directly)", "–", (r) => s(r.seedS * 1000));
  row(
    "cold start: spawn → every core holds every user (from /health)",
    "≤ 1.2 × reference",
    (r) => `${s(r.coldMs)} (${s(r.coldFromHealthMs)})`,
  );
  row("reference: the cores' own time to add their users, in parallel", "–", (r) => s(r.coldReferenceMs));
  row("the cores' own time with their users inline in AddInbound, in parallel", "–", (r) =>
    s(r.coldInlineMs),
  );
  row("cold start / reference", "≤ 1.2×", (r) =>
    r.notConverged !== undefined
      ? `**not met: ${r.notConverged}**`
      : `**${ratio(r.coldMs, r.coldReferenceMs)}: ${verdict(r.coldMs <= 1.2 * r.coldReferenceMs)}**`,
  );
  row("panel CPU during the cold start", "–", (r) => s(r.coldCpuS * 1000));
  for (const kind of ["user search", "user", "server"]) {
    row(`API p99 during the cold start: ${kind} (p50; n)`, "< 50 ms", (r) => {
      const a = r.api[kind];
      return a === undefined
        ? "–"
        : `**${a.p99.toFixed(1)} ms: ${verdict(a.p99 < 50)}** (${a.p50.toFixed(1)} ms; ${a.n})${a.failed > 0 ? `; ${a.failed} call(s) of the three kinds failed` : ""}`;
    });
  }
  row(
    "one fleet-wide poll: panel CPU, first answer → every delta written (journaled)",
    "≤ 1 s",
    after((r) => `**${ms(r.poll.writtenCpuMs)}: ${sizedVerdict(r.poll.writtenCpuMs <= 1000)}**`),
  );
  row(
    "one fleet-wide poll: wall, first answer → every delta written (reads)",
    "≤ 2 s",
    after(
      (r) => `**${ms(r.poll.writtenMs)}: ${sizedVerdict(r.poll.writtenMs <= 2000)}** (${ms(r.poll.readMs)})`,
    ),
  );
  row(
    "one fleet-wide poll: first answer → every delta in the totals (the fold's loop): wall; panel CPU",
    "–",
    after((r) =>
      r.poll.missingBytes > 0
        ? `**not all counted: ${r.poll.missingBytes.toLocaleString("en")} of ${r.poll.bytes.toLocaleString("en")} bytes missing after ${ms(r.poll.wallMs)}**`
        : `${ms(r.poll.wallMs)}; ${ms(r.poll.cpuMs)}`,
    ),
  );
  row(
    "one poll: users with traffic; rows written (users + usage buckets)",
    "–",
    after((r) => `${r.poll.users.toLocaleString("en")}; ${r.poll.rows.toLocaleString("en")}`),
  );
  row(
    "database write rate during the poll's writes; database size",
    "–",
    after((r) => `${Math.round(r.db.writeRowsPerS).toLocaleString("en")} rows/s; ${mb(r.db.bytes)}`),
  );
  row(
    "panel CPU while idle (reconcile ticks, empty polls)",
    "–",
    after((r) => `${r.idleCpuMsPerS.toFixed(0)} ms/s`),
  );
  row(
    "lifecycle tick over the fleet's database (from the benchmark)",
    "–",
    after((r) => ms(r.tickMs)),
  );
  row(
    "one core restarted → it holds its users again (from its first call)",
    "≤ 1.2 × reference",
    after((r) => `${s(r.restart.ms)} (${s(r.restart.fromFirstCallMs)})`),
  );
  row(
    "reference: that core's own AddUser time for its users",
    "–",
    after((r) => `${s(r.restart.referenceMs)} (${r.restart.grants.toLocaleString("en")} grants)`),
  );
  row(
    "that core's own time with its users inline in AddInbound",
    "–",
    after((r) => s(r.restart.inlineMs)),
  );
  row(
    "restart / reference (from the first call)",
    "≤ 1.2×",
    after(
      (r) =>
        `**${ratio(r.restart.ms, r.restart.referenceMs)}: ${verdict(r.restart.ms <= 1.2 * r.restart.referenceMs)}** (${ratio(r.restart.fromFirstCallMs, r.restart.referenceMs)})`,
    ),
  );
  row(
    "panel RSS: after the cold start; after the poll; peak",
    "≤ 1.2 GB (10⁶ × 50)",
    after(
      (r) =>
        `${r.rss.afterColdMB.toFixed(0)}; ${r.rss.afterPollMB.toFixed(0)}; **${r.rss.peakMB.toFixed(0)} MB: ${sizedVerdict(r.rss.peakMB <= 1200)}**`,
    ),
  );
  row(
    "real cores: grants probed on the core after the cold start",
    "all",
    after((r) => `${r.real.present} of ${r.real.grantsProbed}`),
  );
  row(
    "real client after the cold start: links that carried 256 KiB; users whose traffic the next poll counted",
    "all",
    after((r) => `**${r.real.carried} of ${r.real.sample}; ${r.real.counted} of ${SAMPLE}**`),
  );
  if (results.some((r) => r.two !== undefined)) {
    row(
      "two instances on one PostgreSQL: servers held by the first + the second; split after the second started; moved since",
      "an even split, both work",
      after((r) =>
        r.two === undefined ? "–" : `**${r.two.split}**; ${s(r.two.splitMs)}; ${r.two.moved} moved`,
      ),
    );
    row(
      "two instances: stand-ins restarted at once (by holder: first + second) → all back; users sent, by AddUser or inline (all cores) / their grants",
      "= 1",
      after((r) =>
        r.two === undefined
          ? "–"
          : `${r.two.restarted} (${r.two.restartedBy.first} + ${r.two.restartedBy.second}): ${s(r.two.coldMs)}; **${r.two.addUserCalls.toLocaleString("en")} / ${r.two.expected.toLocaleString("en")}: ${verdict(r.two.addUserCalls === r.two.expected)}**`,
      ),
    );
    row(
      "two instances: traffic counted exactly once (stand-ins polled by first + second)",
      "yes",
      after((r) =>
        r.two === undefined
          ? "–"
          : `**${r.two.sumExact ? "yes" : "no"}** (${r.two.served}: ${r.two.polledBy.first} + ${r.two.polledBy.second})`,
      ),
    );
  }
  return [...head, ...rows].join("\n");
}

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  const machine = describeMachine([describeCode(ROOT)]);
  const built = spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs")], { stdio: "inherit" });
  if (built.status !== 0) throw new Error("npm run build failed");
  const stack = new CleanupStack();
  let calibration: Calibration;
  try {
    calibration = await calibrate(stack);
  } finally {
    await stack.run();
  }
  const results: Result[] = [];
  for (const dialect of DIALECTS) results.push(await runDialect(dialect, calibration));
  const text = report(calibration, results, machine, startedAt);
  console.log(text);
  if (values.write !== undefined)
    writeBetweenMarkers(values.write, `bench:fleet results, ${values.dialects}`, text);
  // What the run proves (not its speed): a failed check fails the run, e.g. in CI's smoke run.
  const failed = results.flatMap((r) =>
    r.notConverged !== undefined
      ? [`${r.dialect}: ${r.notConverged}`]
      : [
          ...(r.real.carried === r.real.sample
            ? []
            : [`${r.dialect}: the real client carried ${r.real.carried} of ${r.real.sample} links`]),
          ...(r.real.counted === SAMPLE
            ? []
            : [`${r.dialect}: the real traffic of ${SAMPLE - r.real.counted} user(s) was not counted`]),
          ...(r.two === undefined || (r.two.sumExact && r.two.addUserCalls === r.two.expected)
            ? []
            : [
                `${r.dialect}: two instances did work twice (users sent ${r.two.addUserCalls} for ${r.two.expected}, sum exact ${r.two.sumExact})`,
              ]),
          ...(r.two === undefined ||
          (r.two.restartedBy.first > 0 &&
            r.two.restartedBy.second > 0 &&
            r.two.polledBy.first > 0 &&
            r.two.polledBy.second > 0)
            ? []
            : [`${r.dialect}: one of two instances did no work (servers ${r.two.split})`]),
        ],
  );
  if (failed.length > 0) {
    process.stderr.write(`bench:fleet checks failed:\n${failed.join("\n")}\n`);
    process.exit(1);
  }
}

await main();
process.exit(0);
