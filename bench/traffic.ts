// One fleet-wide traffic poll's database writes (issue 52): N users over S servers × 3 inbounds, every
// user with traffic, written through the collection's own path: each server's two QueryStats answers
// (users, inbounds) read from their wire bytes by the client's own decoder (queryTraffic's, the
// in-place scan of cores/traffic-scan.ts), then TrafficRepository.journal for all of them (as
// TrafficService.collectAll does: the poll's write, durable from then on), then the fold (as
// TrafficService.fold: the journal in batches of whole servers, fold-plan.ts, each a
// TrafficRepository.fold) until the journal is empty. Both are measured apart. `--fold each` folds
// after every poll (the job before issue 52's fold loop); `--fold once` journals `--polls N` and folds
// them in ONE fold (what the fold loop does when the fold is slower than the polls). The cores
// are not part of it: their answers are encoded beforehand (protobuf-es), as QueryStats returns them.
// As a reference in the same run, the same answers go through the generic path the panel used before
// (the full protobuf decode into Stat messages, parseTraffic's regular expression and Map, the JSON).
// `--polls N` per run (default 2), 10 s apart: the hour's first (its usage-history rows are inserted),
// then the same hour's (they are added to). After all, the totals in the database are checked against
// what was sent. The fold's peak RSS is the process's high-water mark (VmHWM, reset before the fold).
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { create, toBinary } from "@bufbuild/protobuf";
import { Kysely, type LogEvent, PostgresDialect, SqliteDialect, sql } from "kysely";
import pg from "pg";
import { API_INBOUND_TAGS, type CoreTraffic } from "../src/cores/core-types.ts";
import { joinTraffic } from "../src/cores/traffic-scan.ts";
import { v2rayApi } from "../src/cores/v2ray-api.ts";
import { SqliteBooleanPlugin, timestampParam } from "../src/db/dialect.ts";
import type { Database } from "../src/db/types.ts";
import type { Deps } from "../src/deps.ts";
import { installStarters } from "../src/features/templates/starters.ts";
import { FOLD_BATCH_BYTES, foldBatches } from "../src/features/traffic/fold-plan.ts";
import { TrafficRepository } from "../src/features/traffic/traffic.repository.ts";
import { decodeTraffic, parseTraffic } from "../src/features/traffic/traffic.ts";
import { QueryStatsResponseSchema, StatSchema } from "../src/gen/v2ray/app/stats_command_pb.ts";
import { freePort } from "../test/support/ports.ts";
import { openBenchDeps } from "./lib/bench-deps.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { writeBetweenMarkers } from "./lib/markers.ts";
import { backendCpuSeconds, backendCpuSpent, PG_ADMIN_URL } from "./lib/pg-scratch.ts";
import { fmt } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string", default: "100000,1000000" },
    servers: { type: "string", default: "50" },
    dialects: { type: "string", default: "sqlite,postgres" },
    write: { type: "string" },
    /**
     * each (or true): a fold after every poll; once: the polls journaled, then one fold of them all;
     * false: journaled only, and the journal's sums are checked instead of the totals.
     */
    fold: { type: "string", default: "each" },
    polls: { type: "string", default: "2" },
  },
});
const SIZES = values.users.split(",").map(Number);
const SERVERS = Number(values.servers);
const INBOUNDS_PER_SERVER = 3;
/** Up to 10 s of 36 KB/s each way per user and poll (the default traffic interval). */
const MAX_BYTES = 360_000;
const HOUR = Date.UTC(2026, 5, 1, 12);
const GOAL_MS = 2000;
const FOLD_MODE = values.fold === "true" ? "each" : values.fold;
if (FOLD_MODE !== "each" && FOLD_MODE !== "once" && FOLD_MODE !== "false") {
  throw new Error(`--fold must be each, once or false, got ${values.fold}`);
}
const FOLD = FOLD_MODE !== "false";
const POLLS = Number(values.polls);
/** BENCH_FOLD_BATCH_BYTES: journal text per fold transaction instead of fold-plan.ts's FOLD_BATCH_BYTES. */
const BATCH_BYTES = Number(process.env.BENCH_FOLD_BATCH_BYTES ?? FOLD_BATCH_BYTES);
if (!Number.isInteger(POLLS) || POLLS < 1)
  throw new Error(`--polls must be a positive integer, got ${values.polls}`);

type Dialect = "sqlite" | "postgres";
type Phase = { wallMs: number; panelCpuMs: number; dbCpuMs: number | undefined };
/** A fold: its phase, the polls it folded, the process's peak RSS during it (MB). */
type Fold = Phase & { polls: number; rssBeforeMb: number; rssPeakMb: number | undefined };
type Poll = {
  load: string;
  /** The poll's write: parsing and journaling every server's deltas. */
  journal: Phase;
  /** The fold after this poll (--fold each; --fold once: after the last poll, of them all). */
  fold: Fold | undefined;
  /** Of the write: reading the answers' bytes (wall ms; CPU ms). */
  parseMs: number;
  parseCpuMs: number;
  /** The reference: the same answers through the generic decoder, parseTraffic and JSON (CPU ms). */
  genericCpuMs: number;
  rows: number;
};
type Stat = { name: string; value: bigint };
/** A server's two QueryStats answers as bytes: its users' counters and its inbounds'. */
type Answer = { users: Uint8Array; inbounds: Uint8Array };

/** S servers with three Shadowsocks-2022 inbounds each, through the services (nothing listens). */
async function seedServers(deps: Deps): Promise<{ serverId: string; inboundId: string; tag: string }[]> {
  const { templates, servers, inbounds } = deps.services;
  await installStarters(templates);
  const template = await templates.findByName("shadowsocks-2022");
  if (template === undefined) throw new Error("starter template shadowsocks-2022 is not installed");
  const out: { serverId: string; inboundId: string; tag: string }[] = [];
  for (let s = 0; s < SERVERS; s++) {
    const server = await servers.create({
      name: `bench-${s}`,
      hostname: `s${s}.vpn.example.net`,
      grpc_hostname: "127.0.0.1",
      grpc_port: await freePort(),
    });
    for (let i = 0; i < INBOUNDS_PER_SERVER; i++) {
      const inbound = await inbounds.create(server.id, { template_id: template.id, port: 8388 + i });
      const row = await deps.database.db
        .selectFrom("server_inbounds")
        .select("tag")
        .where("id", "=", inbound.id)
        .executeTakeFirstOrThrow();
      out.push({ serverId: server.id, inboundId: inbound.id, tag: row.tag });
    }
  }
  return out;
}

/** A statement over every user: PostgreSQL's connections stop statements after 30 s, not this one. */
async function big(deps: Deps, query: ReturnType<typeof sql>): Promise<void> {
  if (deps.database.dialect === "sqlite") {
    await query.execute(deps.database.db);
    return;
  }
  await deps.database.db.transaction().execute(async (trx) => {
    await sql`SET LOCAL statement_timeout = 0`.execute(trx);
    await query.execute(trx);
  });
}

/** N users in one INSERT … SELECT, and one grant each: user n on inbound n mod (S × 3). */
async function seedUsers(
  deps: Deps,
  users: number,
  inbounds: { serverId: string; inboundId: string }[],
): Promise<void> {
  const db = deps.database.db;
  const pg = deps.database.dialect === "postgres";
  const base = new Date(HOUR - 86_400_000).toISOString();
  const slots = sql.join(
    inbounds.map((inbound, k) =>
      pg
        ? sql`(cast(${k} as bigint), cast(${inbound.inboundId} as uuid), cast(${inbound.serverId} as uuid))`
        : sql`(${k}, ${inbound.inboundId}, ${inbound.serverId})`,
    ),
  );
  if (pg) {
    await big(
      deps,
      sql`INSERT INTO users (id, name, created_at, updated_at, status)
      SELECT gen_random_uuid(), 'bench user ' || n, ts, ts, 'active'
      FROM (SELECT n, cast(${base} as timestamptz) + n * interval '1 millisecond' AS ts
        FROM generate_series(1, ${users}) AS n) AS s`,
    );
  } else {
    await big(
      deps,
      sql`INSERT INTO users (id, name, created_at, updated_at, status)
      WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${users})
      SELECT lower(hex(randomblob(16))), 'bench user ' || n, ${base}, ${base}, 'active' FROM s`,
    );
  }
  const created = timestampParam(deps.database.dialect, base);
  // BENCH_FILLFACTOR=N (PostgreSQL): user_access's pages filled to N % by the seed instead of
  // migration 0037's 60 % (100: as before it, no room for HOT updates).
  const fillfactor = Number(process.env.BENCH_FILLFACTOR ?? 0);
  if (pg && fillfactor > 0)
    await sql`ALTER TABLE user_access SET (fillfactor = ${sql.lit(fillfactor)})`.execute(db);
  await big(
    deps,
    sql`INSERT INTO user_access (id, user_id, server_inbound_id, server_id, proxy_user_id, credential, level,
      is_active, sync_state, created_at, updated_at)
    WITH slot(k, inbound_id, server_id) AS (VALUES ${slots})
    SELECT ${pg ? sql`gen_random_uuid()` : sql`lower(hex(randomblob(16)))`}, u.id, slot.inbound_id, slot.server_id,
      'u-' || ${pg ? sql`replace(cast(u.id as text), '-', '')` : sql`u.id`}, ${pg ? sql`md5(cast(u.id as text))` : sql`lower(hex(randomblob(16)))`}, 0,
      ${pg ? sql`true` : sql`1`}, 'synced', ${created}, ${created}
    FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM users) AS u
    JOIN slot ON slot.k = u.n % ${sql.lit(inbounds.length)}`,
  );
  await db.deleteFrom("subscription_changes").execute();
  if (pg) {
    await db.connection().execute(async (conn) => {
      await sql`SET statement_timeout = 0`.execute(conn);
      await sql`VACUUM (ANALYZE) users`.execute(conn);
      await sql`VACUUM (ANALYZE) user_access`.execute(conn);
      await sql`RESET statement_timeout`.execute(conn);
    });
    await sql`CHECKPOINT`.execute(db).catch(() => undefined);
  } else {
    await sql`ANALYZE`.execute(db);
  }
}

/** What each server's core answers to QueryStats with reset: every user and inbound with traffic. */
async function coreAnswers(
  deps: Deps,
  inbounds: { serverId: string; tag: string }[],
): Promise<{ answers: Map<string, Answer>; sent: bigint }> {
  const grants = await deps.database.db
    .selectFrom("user_access")
    .select(["server_id", "proxy_user_id"])
    .execute();
  const answers = new Map<string, Stat[]>();
  let sent = 0n;
  const push = (serverId: string, stat: Stat) => {
    const list = answers.get(serverId);
    if (list === undefined) answers.set(serverId, [stat]);
    else list.push(stat);
  };
  for (const grant of grants) {
    const up = BigInt(1 + Math.floor(Math.random() * MAX_BYTES));
    const down = BigInt(1 + Math.floor(Math.random() * MAX_BYTES));
    sent += up + down;
    push(grant.server_id, { name: `user>>>${grant.proxy_user_id}>>>traffic>>>uplink`, value: up });
    push(grant.server_id, { name: `user>>>${grant.proxy_user_id}>>>traffic>>>downlink`, value: down });
  }
  const inboundStats = new Map<string, Stat[]>();
  for (const inbound of inbounds) {
    const list = inboundStats.get(inbound.serverId) ?? [];
    list.push({ name: `inbound>>>${inbound.tag}>>>traffic>>>uplink`, value: 1000n });
    list.push({ name: `inbound>>>${inbound.tag}>>>traffic>>>downlink`, value: 1000n });
    inboundStats.set(inbound.serverId, list);
  }
  const encode = (stats: Stat[]) =>
    toBinary(
      QueryStatsResponseSchema,
      create(QueryStatsResponseSchema, { stat: stats.map((stat) => create(StatSchema, stat)) }),
    );
  const bytes = new Map<string, Answer>();
  for (const [serverId, stats] of answers) {
    bytes.set(serverId, { users: encode(stats), inbounds: encode(inboundStats.get(serverId) ?? []) });
  }
  return { answers: bytes, sent };
}

/** The collection's own reading of one server's answers (GrpcCoreClient.queryTraffic's decode). */
function readAnswer(answer: Answer): CoreTraffic {
  const read = (bytes: Uint8Array) => v2rayApi.queryTraffic("", true).decode(bytes);
  return joinTraffic(read(answer.users), read(answer.inbounds));
}

/** The reference: what the panel did with the same bytes before the scan (decode, regex, Map, JSON). */
function genericPath(answers: Map<string, Answer>): number {
  const before = process.cpuUsage();
  let size = 0;
  for (const answer of answers.values()) {
    const stats = [
      ...v2rayApi.queryStats("", true).decode(answer.users),
      ...v2rayApi.queryStats("", true).decode(answer.inbounds),
    ];
    size += JSON.stringify(
      [parseTraffic(stats, API_INBOUND_TAGS)].map((d) => ({
        users: [...d.users].map(([k, b]) => [k, b.uplinkBytes, b.downlinkBytes]),
        inbounds: [...d.inbounds].map(([k, b]) => [k, b.uplinkBytes, b.downlinkBytes]),
      }))[0],
    ).length;
  }
  const cpu = process.cpuUsage(before);
  if (size === 0) throw new Error("the reference read nothing");
  return (cpu.user + cpu.system) / 1000;
}

async function poll(
  deps: Deps,
  databaseName: string | undefined,
  answers: Map<string, Answer>,
  now: Date,
  foldedPolls: number,
): Promise<Poll> {
  const repository = new TrafficRepository(profiled(deps, databaseName), deps.database.dialect);
  const load = loadavg()[0]?.toFixed(2) ?? "?";
  let parseMs = 0;
  let parseCpuMs = 0;
  let rows = 0;
  // As TrafficService.collectAll: each core's answer read as it arrives, then one journal write.
  const journal = await phase(databaseName, async () => {
    const parts = [...answers].map(([serverId, answer]) => {
      const parseStarted = performance.now();
      const cpuBefore = process.cpuUsage();
      const traffic = readAnswer(answer);
      const cpu = process.cpuUsage(cpuBefore);
      parseCpuMs += (cpu.user + cpu.system) / 1000;
      parseMs += performance.now() - parseStarted;
      return { serverId, traffic };
    });
    await repository.journal(parts, now);
    // Per server: its inbounds and two server buckets (the users' four rows are counted by the fold).
    for (const { traffic } of parts) rows += traffic.inbounds.size + 2;
  });
  if (process.env.BENCH_PROFILE === "1") console.error("  journal:");
  printProfile();
  let fold: Fold | undefined;
  if (foldedPolls > 0) {
    const folding = await foldAll(repository, databaseName);
    fold = { ...folding.phase, polls: foldedPolls };
    rows += folding.rows;
  }
  const genericCpuMs = genericPath(answers);
  return { load, journal, fold, parseMs, parseCpuMs, genericCpuMs, rows };
}

/** As the fold loop: everything journaled, in TrafficService.fold's batches. Rows written. */
async function foldAll(
  repository: TrafficRepository,
  databaseName: string | undefined,
): Promise<{ phase: Omit<Fold, "polls">; rows: number }> {
  let rows = 0;
  const rssBeforeMb = process.memoryUsage.rss() / 1048576;
  const hwm = resetPeakRss();
  const folding = await phase(databaseName, async () => {
    for (const batch of foldBatches(await repository.pending(), BATCH_BYTES)) {
      const folded = await repository.fold({ rows: batch });
      // Per user: the grant, the user, an hourly and a daily bucket.
      rows += folded.users * 4;
    }
  });
  if (process.env.BENCH_PROFILE === "1") console.error("  fold:");
  printProfile();
  return { phase: { ...folding, rssBeforeMb, rssPeakMb: hwm ? peakRssMb() : undefined }, rows };
}

/** Linux: resets the process's RSS high-water mark (clear_refs 5); false if it cannot. */
function resetPeakRss(): boolean {
  try {
    writeFileSync("/proc/self/clear_refs", "5");
    return true;
  } catch {
    return false;
  }
}

function peakRssMb(): number | undefined {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return match === null ? undefined : Number(match[1]) / 1024;
}

async function phase(databaseName: string | undefined, work: () => Promise<void>): Promise<Phase> {
  const dbBefore = databaseName === undefined ? undefined : await backendCpuSeconds(databaseName);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await work();
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const dbAfter = databaseName === undefined ? undefined : await backendCpuSeconds(databaseName);
  return {
    wallMs,
    panelCpuMs: (cpu.user + cpu.system) / 1000,
    dbCpuMs:
      dbBefore === undefined || dbAfter === undefined ? undefined : backendCpuSpent(dbBefore, dbAfter) * 1000,
  };
}

/** BENCH_PROFILE=1: statement time summed per statement (its first 90 characters), printed after each poll. */
const profile = new Map<string, { ms: number; n: number }>();
let profiledDb: Kysely<Database> | undefined;
function profiled(deps: Deps, databaseName: string | undefined): Kysely<Database> {
  if (process.env.BENCH_PROFILE !== "1") return deps.database.db;
  profiledDb ??= logging(deps, databaseName);
  return profiledDb;
}

function logging(deps: Deps, databaseName: string | undefined): Kysely<Database> {
  const log = (event: LogEvent) => {
    const key = event.query.sql.replace(/\s+/g, " ").slice(0, 90);
    const entry = profile.get(key) ?? { ms: 0, n: 0 };
    entry.ms += event.queryDurationMillis;
    entry.n += 1;
    profile.set(key, entry);
  };
  if (deps.database.sqlite !== undefined) {
    return new Kysely<Database>({
      dialect: new SqliteDialect({ database: deps.database.sqlite }),
      plugins: [new SqliteBooleanPlugin()],
      log,
    });
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${databaseName}`;
  return new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: new pg.Pool({ connectionString: url.toString(), max: 2 }),
    }),
    log,
  });
}

function printProfile(): void {
  if (profile.size === 0) return;
  for (const [key, { ms, n }] of [...profile].sort((a, b) => b[1].ms - a[1].ms)) {
    console.error(`    ${ms.toFixed(0).padStart(7)} ms ${String(n).padStart(5)}×  ${key}`);
  }
  profile.clear();
}

/** --fold false: the journal's rows, decoded, against what the cores sent (users and inbounds). */
async function verifyJournal(deps: Deps, sent: bigint, inboundBytes: number): Promise<string> {
  const rows = await deps.database.db.selectFrom("traffic_journal").select("deltas").execute();
  let users = 0;
  let inbounds = 0;
  for (const row of rows) {
    const deltas = decodeTraffic(row.deltas);
    for (const bytes of deltas.users.values()) users += bytes.uplinkBytes + bytes.downlinkBytes;
    for (const bytes of deltas.inbounds.values()) inbounds += bytes.uplinkBytes + bytes.downlinkBytes;
  }
  if (BigInt(users) !== sent || inbounds !== inboundBytes) {
    throw new Error(
      `journal holds ${users} user bytes (sent ${sent}) and ${inbounds} inbound bytes (sent ${inboundBytes})`,
    );
  }
  return "exact (journal)";
}

/** The database's totals against what the cores sent: every byte counted once, in every place. */
async function verify(deps: Deps, sent: bigint): Promise<string> {
  const db = deps.database.db;
  const sum = async (query: ReturnType<typeof sql<{ total: string | number | bigint | null }>>) =>
    BigInt((await query.execute(db)).rows[0]?.total ?? 0);
  const grants = await sum(sql`SELECT sum(uplink_bytes + downlink_bytes) AS total FROM user_access`);
  const users = await sum(sql`SELECT sum(used_bytes) AS total FROM users`);
  const lifetime = await sum(sql`SELECT sum(lifetime_used_bytes) AS total FROM users`);
  const hourly = await sum(sql`SELECT sum(uplink_bytes + downlink_bytes) AS total FROM user_usage_hourly`);
  const daily = await sum(sql`SELECT sum(uplink_bytes + downlink_bytes) AS total FROM user_usage_daily`);
  const servers = await sum(sql`SELECT sum(uplink_bytes + downlink_bytes) AS total FROM server_usage_hourly`);
  const wrong = Object.entries({ grants, users, lifetime, hourly, daily, servers }).filter(
    ([, total]) => total !== sent,
  );
  if (wrong.length > 0) {
    throw new Error(
      `totals differ from the ${sent} bytes sent: ${wrong.map(([k, v]) => `${k} ${v}`).join(", ")}`,
    );
  }
  return "exact";
}

async function measure(dialect: Dialect, users: number): Promise<{ polls: Poll[]; verdict: string }> {
  const { deps, databaseUrl, close } = await openBenchDeps(dialect);
  try {
    const seeded = performance.now();
    const inbounds = await seedServers(deps);
    await seedUsers(deps, users, inbounds);
    console.error(
      `${dialect}, ${users} users: seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
    );
    const databaseName = databaseUrl === undefined ? undefined : new URL(databaseUrl).pathname.slice(1);
    const polls: Poll[] = [];
    let sent = 0n;
    for (let i = 0; i < POLLS; i++) {
      const at = new Date(HOUR + 60_000 + i * 10_000);
      const answer = await coreAnswers(deps, inbounds);
      sent += answer.sent;
      const foldedPolls = FOLD_MODE === "each" ? 1 : FOLD_MODE === "once" && i === POLLS - 1 ? POLLS : 0;
      const result = await poll(deps, databaseName, answer.answers, at, foldedPolls);
      console.error(`  poll ${i + 1}:`, result);
      printProfile();
      polls.push(result);
    }
    const inboundBytes = polls.length * inbounds.length * 2000;
    return {
      polls,
      verdict: FOLD ? await verify(deps, sent) : await verifyJournal(deps, sent, inboundBytes),
    };
  } finally {
    // SQLite: the service's own connection, closed with it; PostgreSQL: a pool of the bench's own.
    if (deps.database.dialect === "postgres") await profiledDb?.destroy();
    profiledDb = undefined;
    await close();
  }
}

const startedAt = new Date().toISOString();
const out: string[] = [
  `Run of ${startedAt}: \`npm run bench:traffic${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}\``,
  "",
  ...describeMachine([describeCode(join(import.meta.dirname, ".."))]).map((line) => `- ${line}`),
  `- ${SERVERS} servers × ${INBOUNDS_PER_SERVER} inbounds, one grant per user, every user with traffic in each of ${POLLS} polls 10 s apart in one hour; the poll journals all servers in one transaction; ${FOLD_MODE === "once" ? `one fold of all ${POLLS} polls after the last` : FOLD_MODE === "each" ? "a fold after each poll" : "no fold"}, in transactions of whole servers' rows (about ${BATCH_BYTES.toLocaleString("en")} bytes of journal text, one poll's worth, each)`,
  ...(process.env.BENCH_FILLFACTOR === undefined
    ? []
    : [
        `- BENCH_FILLFACTOR=${process.env.BENCH_FILLFACTOR}: PostgreSQL's user_access seeded with that fillfactor`,
      ]),
  "",
  `- the poll's write: the answers read from their bytes (QueryStats as the v2ray namespace encodes it), then journaled; "parsing" is the reading's CPU, and "generic" the same answers read the way the panel did before (full decode, parseTraffic, JSON), measured after each poll as a reference${FOLD ? "" : "; --fold false: not folded, the journal's sums checked"}`,
  "",
  "| dialect | users | poll | poll's write: wall ms | goal | panel CPU ms (of it: parsing; generic reference) | PostgreSQL CPU ms | fold: polls folded | wall ms | panel CPU ms | PostgreSQL CPU ms | per poll folded: wall; CPU ms | RSS MB: before → peak | rows written | totals |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
];
for (const dialect of values.dialects.split(",") as Dialect[]) {
  for (const users of SIZES) {
    const { polls, verdict } = await measure(dialect, users);
    for (const [i, p] of polls.entries()) {
      const { journal: j, fold: f } = p;
      const goal = users >= 1_000_000 ? `≤ ${GOAL_MS} ms: ${j.wallMs <= GOAL_MS ? "met" : "MISSED"}` : "–";
      const db = (ms: number | undefined) => (ms === undefined ? "–" : fmt(ms));
      const cpu = f === undefined ? 0 : f.panelCpuMs + (f.dbCpuMs ?? 0);
      const folding =
        f === undefined
          ? "– | – | – | – | – | –"
          : `${f.polls} | ${fmt(f.wallMs)} | ${fmt(f.panelCpuMs)} | ${db(f.dbCpuMs)} | ${fmt(f.wallMs / f.polls)}; ${fmt(cpu / f.polls)} | ${f.rssBeforeMb.toFixed(0)} → ${f.rssPeakMb === undefined ? "–" : f.rssPeakMb.toFixed(0)}`;
      out.push(
        `| ${dialect} (load ${p.load}) | ${users.toLocaleString("en")} | ${i === 0 ? "1 (new hour)" : `${i + 1} (same hour)`} | ${fmt(j.wallMs)} | ${goal} | ${fmt(j.panelCpuMs)} (${fmt(p.parseCpuMs)}; ${fmt(p.genericCpuMs)}) | ${db(j.dbCpuMs)} | ${folding} | ${p.rows.toLocaleString("en")} | ${verdict} |`,
      );
    }
  }
}
console.log(out.join("\n"));
if (values.write !== undefined) {
  writeBetweenMarkers(values.write, `bench:traffic results, ${values.dialects}`, out.join("\n"));
}
