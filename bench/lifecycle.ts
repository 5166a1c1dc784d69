import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Kysely, type LogEvent, PostgresDialect, type RawBuilder, SqliteDialect, sql } from "kysely";
import pg from "pg";
import { SqliteBooleanPlugin, timestampParam } from "../src/db/dialect.ts";
import type { Database } from "../src/db/types.ts";
import type { Deps } from "../src/deps.ts";
import { LifecycleRepository } from "../src/features/users/lifecycle.repository.ts";
import { LifecycleService } from "../src/features/users/lifecycle.service.ts";
import { openBenchDeps } from "./lib/bench-deps.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { writeBetweenMarkers } from "./lib/markers.ts";
import { fmt } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string", default: "100000,1000000" },
    ticks: { type: "string", default: "6" },
    "step-minutes": { type: "string", default: "10" },
    dialects: { type: "string", default: "sqlite,postgres" },
    write: { type: "string" },
  },
});
const SIZES = values.users.split(",").map(Number);
const TICKS = Number(values.ticks);
/** How far the clock moves per tick; the traffic before each tick is this much time's worth. */
const STEP_MINUTES = Number(values["step-minutes"]);
/** Three steps before midnight: the fourth tick crosses it. */
const START = new Date(Date.UTC(2026, 5, 2) - (3 * STEP_MINUTES - 5) * 60_000);
/** Each user's traffic: up to 128 MiB an hour (36 KB/s on average), pro rata per step. */
const MAX_DELTA = Math.round((128 * 1024 * 1024 * STEP_MINUTES) / 60);
const GIB = 1024 ** 3;
const TARGET_MS: Record<number, number> = { 100000: 250, 1000000: 2500 };

type Dialect = "sqlite" | "postgres";
type TickRow = {
  ms: number;
  activated: number;
  limited: number;
  expired: number;
  resets: number;
  notices: number;
};

/** A statement over every user: PostgreSQL's connections stop statements after 30 s, not this one. */
async function big(deps: Deps, query: RawBuilder<unknown>): Promise<void> {
  if (deps.database.dialect === "sqlite") {
    await query.execute(deps.database.db);
    return;
  }
  await deps.database.db.transaction().execute(async (trx) => {
    await sql`SET LOCAL statement_timeout = 0`.execute(trx);
    await query.execute(trx);
  });
}

/** Every user in one statement: 10 GiB limits, used 0-10 GiB, a period mix, expiries over 30 days. */
async function seed(deps: Deps, users: number): Promise<void> {
  const base = START.toISOString();
  const db = deps.database.db;
  const limit = sql.lit(10 * GIB);
  if (deps.database.dialect === "postgres") {
    await big(
      deps,
      sql`INSERT INTO users (id, name, created_at, updated_at, status, data_limit_bytes, data_limit_reset,
        used_bytes, expire_at, next_reset_at)
      SELECT gen_random_uuid(), 'bench user ' || n, ts, ts, 'active', ${limit},
        (CASE WHEN n % 20 = 0 THEN 'day' WHEN n % 20 < 5 THEN 'month' WHEN n % 20 = 5 THEN 'month_rolling'
          ELSE 'no_reset' END),
        floor(random() * ${limit})::bigint,
        (CASE WHEN n % 10 = 0 THEN NULL ELSE cast(${base} as timestamptz) + random() * interval '30 days' END),
        (CASE WHEN n % 20 = 0 THEN timestamptz '2026-06-02T00:00:00Z'
          WHEN n % 20 < 5 THEN timestamptz '2026-07-01T00:00:00Z'
          WHEN n % 20 = 5 THEN cast(${base} as timestamptz) + random() * interval '30 days' END)
      FROM (SELECT n, cast(${base} as timestamptz) - n * interval '10 seconds' AS ts
        FROM generate_series(1, ${users}) AS n) AS s`,
    );
    await settleNotices(deps);
    // The seed's own rewrites (settleNotices: three over every row) leave dead tuples and index
    // entries a database that has been around would long have vacuumed; the ticks' traffic rewrites
    // that follow are not vacuumed (no autovacuum in between: the worst case).
    await db.connection().execute(async (conn) => {
      await sql`SET statement_timeout = 0`.execute(conn);
      await sql`VACUUM (ANALYZE) users`.execute(conn);
      await sql`RESET statement_timeout`.execute(conn);
    });
    await sql`CHECKPOINT`.execute(db).catch(() => undefined);
  } else {
    const at = (offset: string) => sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${base}, ${sql.raw(offset)})`;
    await big(
      deps,
      sql`INSERT INTO users (id, name, created_at, updated_at, status, data_limit_bytes, data_limit_reset,
        used_bytes, expire_at, next_reset_at)
      WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${users})
      SELECT lower(hex(randomblob(16))), 'bench user ' || n, ${at("'-' || (n * 10) || ' seconds'")},
        ${at("'-' || (n * 10) || ' seconds'")}, 'active', ${limit},
        (CASE WHEN n % 20 = 0 THEN 'day' WHEN n % 20 < 5 THEN 'month' WHEN n % 20 = 5 THEN 'month_rolling'
          ELSE 'no_reset' END),
        abs(random()) % ${limit},
        (CASE WHEN n % 10 = 0 THEN NULL ELSE ${at("'+' || (abs(random()) % 2592000) || ' seconds'")} END),
        (CASE WHEN n % 20 = 0 THEN '2026-06-02T00:00:00.000Z' WHEN n % 20 < 5 THEN '2026-07-01T00:00:00.000Z'
          WHEN n % 20 = 5 THEN ${at("'+' || (abs(random()) % 2592000) || ' seconds'")} END)
      FROM s`,
    );
    await settleNotices(deps);
    await sql`ANALYZE`.execute(db);
  }
}

/**
 * Users who have been around: the usage notices their usage reached were sent (the next one is
 * armed), and those expiring within the notice window were told so.
 */
async function settleNotices(deps: Deps): Promise<void> {
  await big(
    deps,
    sql`UPDATE users SET notified_usage_percent = (CASE WHEN used_bytes * 100 >= data_limit_bytes * 95 THEN 95
      WHEN used_bytes * 100 >= data_limit_bytes * 80 THEN 80 ELSE 0 END)`,
  );
  await big(
    deps,
    sql`UPDATE users SET next_notice_percent = (CASE notified_usage_percent WHEN 0 THEN 80 WHEN 80 THEN 95
      ELSE NULL END)`,
  );
  const window = new Date(START.getTime() + 3 * 86_400_000).toISOString();
  const ts = (iso: string) => timestampParam(deps.database.dialect, iso);
  await big(
    deps,
    sql`UPDATE users SET expiring_notified_at = ${ts(START.toISOString())}
    WHERE expire_at IS NOT NULL AND expire_at <= ${ts(window)}`,
  );
}

/** What a traffic collection writes for every user: a delta on used_bytes, online_at now. */
async function freshDeltas(deps: Deps, now: Date): Promise<number> {
  const started = performance.now();
  const delta =
    deps.database.dialect === "postgres"
      ? sql`floor(random() * ${sql.lit(MAX_DELTA)})::bigint`
      : sql`abs(random()) % ${sql.lit(MAX_DELTA)}`;
  await big(
    deps,
    sql`UPDATE users SET used_bytes = used_bytes + ${delta}, lifetime_used_bytes = lifetime_used_bytes + 1,
    online_at = ${timestampParam(deps.database.dialect, now.toISOString())}`,
  );
  return performance.now() - started;
}

async function measure(
  dialect: Dialect,
  users: number,
): Promise<{ seedS: number; deltasMs: number; ticks: TickRow[] }> {
  const { deps, databaseUrl, close } = await openBenchDeps(dialect);
  try {
    const seeded = performance.now();
    await seed(deps, users);
    const seedS = (performance.now() - seeded) / 1000;
    console.error(`${dialect}, ${users} users: seeded in ${seedS.toFixed(1)} s`);
    let clock = START;
    const lifecycle = new LifecycleService(
      new LifecycleRepository(profiled(deps, databaseUrl), deps.database.dialect),
      {
        thresholds: deps.config.lifecycle.usagePercents,
        expiringNoticeSeconds: deps.config.lifecycle.expiringDays * 86_400,
      },
      () => clock,
      (type, datas) => deps.services.notifier.emitMany(type, datas),
      deps.events,
    );
    const ticks: TickRow[] = [];
    const deltas: number[] = [];
    for (let i = 0; i < TICKS; i++) {
      clock = new Date(START.getTime() + i * STEP_MINUTES * 60_000);
      deltas.push(await freshDeltas(deps, clock));
      const started = performance.now();
      const result = await lifecycle.tick();
      const ms = performance.now() - started;
      const row = {
        ms,
        activated: result.activated.length,
        limited: result.limited.length,
        expired: result.expired.length,
        resets: result.resets,
        notices: result.thresholds.length + result.expiring.length,
      };
      ticks.push(row);
      console.error(`  tick ${i + 1} at ${clock.toISOString()}: ${fmt(ms)} ms`, row);
    }
    return { seedS, deltasMs: deltas.reduce((a, b) => a + b, 0) / deltas.length, ticks };
  } finally {
    await close();
  }
}

/** BENCH_PROFILE=1: the tick's statements through a Kysely that prints each one's duration. */
function profiled(deps: Deps, databaseUrl: string | undefined): Kysely<Database> {
  if (process.env.BENCH_PROFILE !== "1") return deps.database.db;
  const log = (event: LogEvent) =>
    console.error(
      `    ${event.queryDurationMillis.toFixed(1)} ms  ${event.query.sql.replace(/\s+/g, " ").slice(0, 140)}`,
    );
  if (deps.database.sqlite !== undefined) {
    return new Kysely<Database>({
      dialect: new SqliteDialect({ database: deps.database.sqlite }),
      plugins: [new SqliteBooleanPlugin()],
      log,
    });
  }
  return new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: databaseUrl, max: 2 }) }),
    log,
  });
}

const startedAt = new Date().toISOString();
const out: string[] = [
  `Run of ${startedAt}: \`npm run bench:lifecycle${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}\``,
  "",
  ...describeMachine([describeCode(join(import.meta.dirname, ".."))]).map((line) => `- ${line}`),
  `- ${TICKS} ticks per run, the clock ${STEP_MINUTES} minutes further each (from ${START.toISOString()}), each user up to ${(MAX_DELTA / 1024 / 1024).toFixed(1)} MiB of fresh traffic before each tick; tick 4 crosses midnight`,
  "",
  "| dialect | users | tick 1 ms | median tick ms | worst tick ms (which) | target | moved per tick (activated/limited/expired/resets/notices, median tick) | deltas written (not in the tick) ms |",
  "|---|---|---|---|---|---|---|---|",
];
for (const dialect of values.dialects.split(",") as Dialect[]) {
  for (const users of SIZES) {
    const load = loadavg()[0]?.toFixed(2) ?? "?";
    const { ticks, deltasMs } = await measure(dialect, users);
    const sorted = [...ticks].sort((a, b) => a.ms - b.ms);
    const median = sorted[Math.floor(sorted.length / 2)] as TickRow;
    const worst = sorted.at(-1) as TickRow;
    const target = TARGET_MS[users];
    const verdict =
      target === undefined ? "–" : `< ${target} ms: ${worst.ms < target ? "met" : "MISSED"} (worst)`;
    out.push(
      `| ${dialect} (load ${load}) | ${users.toLocaleString("en")} | ${fmt(ticks[0]?.ms ?? Number.NaN)} | ${fmt(median.ms)} | ${fmt(worst.ms)} (tick ${ticks.indexOf(worst) + 1}) | ${verdict} | ${median.activated}/${median.limited}/${median.expired}/${median.resets}/${median.notices} | ${fmt(deltasMs)} |`,
    );
  }
}
console.log(out.join("\n"));
// One marker pair per dialect list, so the dialects may be run (and recorded) apart.
if (values.write !== undefined) {
  writeBetweenMarkers(values.write, `bench:lifecycle results, ${values.dialects}`, out.join("\n"));
}
