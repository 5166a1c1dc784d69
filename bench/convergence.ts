// `npm run bench:convergence [-- --grants N --rounds R --dialects sqlite,postgres --smoke]`: against a
// real V2Ray core, per dialect, R rounds of (1) the raw add-user rate: the CoreClient adding N
// pre-built users with 64 in flight, and (2) a bulk grant of N users through the HTTP layer
// (POST …/users/bulk, in-process inject) onto a fresh inbound; medians and per-round ratios are
// reported, since a shared machine makes single runs noisy. Then (3) recovery: with N grants on the
// core, it is killed (SIGKILL) and started again while the reconcile job runs with its default
// interval: time to detect the restart, the re-apply, restart → every grant back (checked on the core).
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pino from "pino";
import { buildApp } from "../src/app.ts";
import { loadConfig } from "../src/config/config.ts";
import { GrpcCoreClient } from "../src/cores/grpc-core-client.ts";
import { buildInbound, buildUser } from "../src/cores/inbound-builder/build.ts";
import type { BuiltUser } from "../src/cores/inbound-builder/built.ts";
import { createDeps, type Deps } from "../src/deps.ts";
import { reconcileJob } from "../src/jobs/reconcile.ts";
import { startJobs } from "../src/jobs/runner.ts";
import { eachWithWorkers } from "../src/lib/limiter.ts";
import { grantsOf, probeCore } from "../test/support/convergence.ts";
import { waitFor } from "../test/support/poll.ts";
import { freePort } from "../test/support/ports.ts";
import { kindTemplate } from "../test/support/provisioning.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../test/support/v2ray.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { createScratchDatabase } from "./lib/pg-scratch.ts";

const { values } = parseArgs({
  options: {
    grants: { type: "string" },
    rounds: { type: "string" },
    dialects: { type: "string", default: "sqlite,postgres" },
    smoke: { type: "boolean", default: false },
  },
});
const GRANTS = Number(values.grants ?? (values.smoke ? 1000 : 10_000));
const ROUNDS = Number(values.rounds ?? (values.smoke ? 1 : 3));
const RECONCILE_INTERVAL_MS = 3000; // the default of PORTCULLIS_RECONCILE_INTERVAL_MS
const ROOT = new URL("..", import.meta.url).pathname;

type Round = { raw: number; bulk: number };
type Result = { dialect: string; rounds: Round[]; detectMs: number; reapplyMs: number; recoveredMs: number };
type Api = (method: "POST" | "DELETE", url: string, payload?: Record<string, unknown>) => Promise<Json>;
type Json = Record<string, unknown>;
type Setup = {
  deps: Deps;
  api: Api;
  core: V2rayServer;
  serverId: string;
  templateId: string;
  users: string[];
};

const log = (text: string) => process.stderr.write(`  ${text}\n`);
const perSecond = (count: number, ms: number) => Math.round((count * 1000) / ms);
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? Number.NaN;

/** The CoreClient alone: N pre-built users on a fresh inbound, 64 in flight; the inbound is removed after. */
async function rawRate(core: V2rayServer, count: number, tag: string): Promise<number> {
  const client = new GrpcCoreClient({ address: core.apiAddress, layout: "v2ray-4" });
  try {
    const settings = { clients: [], decryption: "none" };
    const json = { tag, port: await freePort(), listen: "127.0.0.1", protocol: "vless", settings };
    const inbound = buildInbound(json, "v2ray");
    if (!inbound.ok) throw new Error(JSON.stringify(inbound.problems));
    await client.replaceInbound(inbound.value);
    const users: BuiltUser[] = [];
    for (let i = 0; i < count; i++) {
      const user = buildUser("vless", "v2ray", { email: `${tag}-${i}`, credential: randomUUID() });
      if (!user.ok) throw new Error(JSON.stringify(user.problems));
      users.push(user.value);
    }
    const started = performance.now();
    await eachWithWorkers(users, 64, (user) => client.addUser(inbound.value.ref, user));
    const rate = perSecond(count, performance.now() - started);
    await client.removeInbound(tag);
    return rate;
  } finally {
    client.close();
  }
}

async function seedUsers(deps: Deps, count: number): Promise<string[]> {
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

async function setup(dialect: string, stack: CleanupStack): Promise<Setup> {
  const dataDir = mkdtempSync(join(tmpdir(), "portcullis-bench-conv-"));
  stack.add(() => rmSync(dataDir, { recursive: true, force: true }));
  let databaseUrl: string | undefined;
  if (dialect === "postgres") {
    const scratch = await createScratchDatabase("portcullis_bench_conv");
    stack.add(() => scratch.drop());
    databaseUrl = scratch.url;
  }
  const deps = await createDeps(loadConfig({ DATA_DIR: dataDir, DATABASE_URL: databaseUrl }), {
    logger: pino({ level: "warn" }),
  });
  stack.add(() => deps.close());
  const app = await buildApp(deps);
  stack.add(() => app.close());
  const admin = { username: "admin", password: "bench password 1" };
  await deps.services.auth.ensureFirstAdmin(admin.username, admin.password);
  const login = await app.inject({ method: "POST", url: "/api/auth/token", payload: admin });
  const authorization = `Bearer ${login.json().access_token}`;
  const api: Api = async (method, url, payload) => {
    const res = await app.inject({
      method,
      url,
      headers: { authorization },
      ...(payload === undefined ? {} : { payload }),
    });
    if (res.statusCode >= 300)
      throw new Error(`${method} ${url}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    return res.body === "" ? {} : (res.json() as Json);
  };
  const core = await startV2rayServer(stack.add);
  const server = await api("POST", "/api/servers", {
    name: "bench",
    hostname: "127.0.0.1",
    grpc_port: core.apiPort,
  });
  const template = await api(
    "POST",
    "/api/templates",
    kindTemplate({ protocol: "vless", network: "tcp", tls: false }),
  );
  const users = await seedUsers(deps, GRANTS);
  return { deps, api, core, serverId: String(server.id), templateId: String(template.id), users };
}

/** Raw then bulk, R times; each bulk onto a new inbound. All inbounds but the last are deleted after. */
async function throughput(s: Setup): Promise<Round[]> {
  // Warm-up of both paths (JIT, channel, statement caches), not measured.
  await rawRate(s.core, Math.min(GRANTS, 2000), "warmup");
  const spare = await s.api("POST", `/api/servers/${s.serverId}/inbounds`, {
    template_id: s.templateId,
    port: await freePort(),
  });
  const some = s.users.slice(0, Math.min(GRANTS, 2000));
  await s.api("POST", `/api/servers/${s.serverId}/inbounds/${spare.id}/users/bulk`, { user_ids: some });
  await s.api("DELETE", `/api/servers/${s.serverId}/inbounds/${spare.id}`);
  const rounds: Round[] = [];
  const inbounds: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const raw = await rawRate(s.core, GRANTS, `raw-${round}`);
    const inbound = await s.api("POST", `/api/servers/${s.serverId}/inbounds`, {
      template_id: s.templateId,
      port: await freePort(),
    });
    inbounds.push(String(inbound.id));
    const started = performance.now();
    const bulk = await s.api("POST", `/api/servers/${s.serverId}/inbounds/${inbound.id}/users/bulk`, {
      user_ids: s.users,
    });
    const bulkMs = performance.now() - started;
    const sync = bulk.sync as { synced: number };
    if (sync.synced !== GRANTS) throw new Error(`bulk: ${JSON.stringify(sync)}`);
    rounds.push({ raw, bulk: perSecond(GRANTS, bulkMs) });
    log(`round ${round}: raw ${raw}/s, bulk ${perSecond(GRANTS, bulkMs)}/s (${Math.round(bulkMs)} ms)`);
  }
  for (const id of inbounds.slice(0, -1)) await s.api("DELETE", `/api/servers/${s.serverId}/inbounds/${id}`);
  return rounds;
}

/** Kill -9 the core with N grants on it, start it again, and time detection, re-apply and recovery. */
async function recovery(s: Setup) {
  const logger = pino({ level: "warn" });
  const { deps } = s;
  const job = reconcileJob({
    ...{ reconciler: deps.services.reconciler, servers: deps.services.servers, leases: deps.leases, logger },
    ...{ intervalMs: RECONCILE_INTERVAL_MS, concurrency: 4 },
  });
  const running = startJobs([job], logger);
  try {
    const state = () => deps.services.reconciler.state(s.serverId);
    const before = await waitFor(async () => (await state()).appliedCoreStartedAt, {
      timeoutMs: 120_000,
      what: "a full apply",
    });
    await s.core.kill("SIGKILL");
    const restartedAt = performance.now();
    await s.core.restart();
    const changed = async () => (await state()).appliedCoreStartedAt !== before;
    await waitFor(changed, { timeoutMs: 120_000, intervalMs: 20, what: "the re-apply" });
    const recoveredMs = performance.now() - restartedAt;
    const reapplyMs = deps.services.reconciler.lastSummary(s.serverId)?.duration_ms ?? Number.NaN;
    const probe = await probeCore(s.core.apiAddress, await grantsOf(deps, s.serverId));
    if (probe.present.length !== GRANTS)
      throw new Error(`${probe.absent.length} grants missing after the recovery`);
    log(
      `recovered ${GRANTS} grants ${Math.round(recoveredMs)} ms after the restart (re-apply ${reapplyMs} ms)`,
    );
    return { detectMs: recoveredMs - reapplyMs, reapplyMs, recoveredMs };
  } finally {
    await running.stop();
  }
}

/** Described before anything runs, so the load average is the one at the start. */
const MACHINE = describeMachine([
  "v2ray: Debian 4.34 (one core on the same machine, API over loopback)",
  describeCode(ROOT),
]);

function report(results: Result[]): string {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const rows = results.map((r) => {
    const raw = median(r.rounds.map((x) => x.raw));
    const bulk = median(r.rounds.map((x) => x.bulk));
    const ratios = r.rounds.map((x) => `${Math.round((100 * x.bulk) / x.raw)} %`).join(", ");
    const cells = [r.dialect, `${raw}/s`, `${bulk}/s`, `**${Math.round((100 * bulk) / raw)} %** (${ratios})`];
    return `| ${[...cells, seconds(r.detectMs), seconds(r.reapplyMs), seconds(r.recoveredMs)].join(" | ")} |`;
  });
  return [
    ...MACHINE.map((line) => `- ${line}`),
    `- ${GRANTS.toLocaleString("en")} grants; ${ROUNDS} round(s) of raw then bulk after a warm-up of both; recovery with the default 3 s interval`,
    "",
    "| dialect | raw add-user, median | bulk grant (HTTP), median | bulk / raw (per round) | restart → detected | re-apply | restart → all back |",
    "|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

const results: Result[] = [];
for (const dialect of values.dialects.split(",")) {
  process.stderr.write(`\n${dialect}: ${GRANTS} grants, ${ROUNDS} round(s)\n`);
  const stack = new CleanupStack();
  try {
    const s = await setup(dialect, stack);
    const rounds = await throughput(s);
    results.push({ dialect, rounds, ...(await recovery(s)) });
  } finally {
    await stack.run();
  }
}
process.stdout.write(`${report(results)}\n`);
