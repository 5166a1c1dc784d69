// `npm run bench:users [-- --users N --samples K --dialects sqlite,postgres --write docs/benchmarks/users-search.md]`: seeds N users
// (default 1,000,000) into each dialect, then reports p50/p99 of search, get-by-id and list-page
// through the HTTP layer (in-process inject), and a full-scan baseline of the same name queries
// measured in the same run. PostgreSQL: BENCH_PG_URL (default postgres://root@127.0.0.1:5432/postgres)
// is used to create and drop a scratch database.
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { buildApp } from "../src/app.ts";
import { escapeLike } from "../src/db/dialect.ts";
import type { Deps } from "../src/deps.ts";
import { openBenchDeps } from "./lib/bench-deps.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { writeBetweenMarkers } from "./lib/markers.ts";
import { fmt, prng, type Summary, summarize, timeEach } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string", default: "1000000" },
    samples: { type: "string", default: "2000" },
    dialects: { type: "string", default: "sqlite,postgres" },
    write: { type: "string" },
  },
});
const USERS = Number(values.users);
const SAMPLES = Number(values.samples);

// 21 consonants x 6 vowels = 126 syllables; names of 2-3 syllables per part. A 4-7 character
// substring of such names matches tens to thousands of the 1M users, like real name fragments do.
const SYLLABLES = [..."bcdfghjklmnprstvwxyzq"].flatMap((c) => [..."aeiouy"].map((v) => c + v));
const random = prng(42);
const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)] as T;
const word = (n: number) => Array.from({ length: n }, () => pick(SYLLABLES)).join("");
const capital = (s: string) => s[0]?.toUpperCase() + s.slice(1);

function makeUser(i: number) {
  const now = new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
  return {
    id: randomUUID(),
    name: `${capital(word(2 + Math.floor(random() * 2)))} ${capital(word(2 + Math.floor(random() * 2)))}`,
    comment: null,
    telegram_id: 100_000_000 + i,
    created_at: now,
    updated_at: now,
  };
}

async function seed(deps: Deps): Promise<{ ids: string[]; names: string[] }> {
  const ids: string[] = [];
  const names: string[] = [];
  const batchSize = 1000;
  const started = Date.now();
  for (let offset = 0; offset < USERS; offset += 10 * batchSize) {
    await deps.database.db.transaction().execute(async (trx) => {
      for (let b = offset; b < Math.min(USERS, offset + 10 * batchSize); b += batchSize) {
        const rows = Array.from({ length: Math.min(batchSize, USERS - b) }, (_, k) => makeUser(b + k));
        for (const row of rows) {
          if (ids.length < 100_000 || random() < 0.05) {
            ids.push(row.id);
            names.push(row.name);
          }
        }
        await trx.insertInto("users").values(rows).execute();
      }
    });
  }
  if (deps.database.dialect === "postgres") {
    await sql`VACUUM ANALYZE users`.execute(deps.database.db);
    // Write the seed's dirty pages now, not during the measurement (a superuser may; else skip).
    await sql`CHECKPOINT`.execute(deps.database.db).catch(() => undefined);
  }
  console.error(`  seeded ${USERS} users in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { ids, names };
}

function substringOf(name: string, length: number): string {
  const start = Math.floor(random() * Math.max(1, name.length - length));
  return name.slice(start, start + length).toLowerCase();
}

type Row = [string, Summary];

/**
 * Where the PostgreSQL search time goes: the same fragments timed inside the server (EXPLAIN
 * ANALYZE of the query the API runs, and of the plain `name ILIKE … LIMIT 100` the planner would run
 * without migration 0011), and the slowest API calls with the plan the plain query gets.
 */
async function postgresTail(deps: Deps, queries: string[], apiTimes: number[]): Promise<string[]> {
  const db = deps.database.db;
  type Plan = { "QUERY PLAN": { "Execution Time": number; Plan: PlanNode }[] };
  const explain = async (query: "function" | "plain", q: string) => {
    const pattern = `%${escapeLike(q)}%`;
    const statement =
      query === "function"
        ? sql<Plan>`EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM users_with_name_like(${pattern}, 100)`
        : sql<Plan>`EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM users WHERE name ILIKE ${pattern} ESCAPE '\\' LIMIT 100`;
    const plan = (await statement.execute(db)).rows[0]?.["QUERY PLAN"][0];
    return { ms: plan?.["Execution Time"] ?? Number.NaN, node: scanOf(plan?.Plan) };
  };
  const viaFunction = "function";
  const plain = "plain";
  const inside: number[] = [];
  const planner: number[] = [];
  for (const q of queries) {
    inside.push((await explain(viaFunction, q)).ms);
    planner.push((await explain(plain, q)).ms);
  }
  const line = (label: string, samples: number[]) => {
    const s = summarize(samples);
    return `| ${label} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.mean)} |`;
  };
  const out = [
    "Where the time of `search name, 4-7 chars` goes (the same fragments, one after the other):",
    "",
    "| measured | p50 ms | p99 ms | mean ms |",
    "|---|---|---|---|",
    line("through the API (the row above)", apiTimes),
    line("inside PostgreSQL: the query the API runs (EXPLAIN ANALYZE execution time)", inside),
    line("inside PostgreSQL: the plain `ILIKE … LIMIT 100`, as the planner runs it", planner),
    "",
    "The plain query for the slowest of these fragments through the API:",
    "",
    "| fragment | API ms | plain query: scan | plain query ms | API's query ms |",
    "|---|---|---|---|---|",
  ];
  const slowest = queries.map((q, i) => ({ q, ms: apiTimes[i] ?? 0 })).sort((a, b) => b.ms - a.ms);
  for (const { q, ms } of slowest.slice(0, 5)) {
    const plainPlan = await explain(plain, q);
    const used = await explain(viaFunction, q);
    out.push(`| \`${q}\` | ${fmt(ms)} | ${plainPlan.node} | ${fmt(plainPlan.ms)} | ${fmt(used.ms)} |`);
  }
  return [...out, ""];
}

type PlanNode = { "Node Type": string; Plans?: PlanNode[] };

/** The scan under the Limit: "Seq Scan" or "Bitmap Heap Scan". */
function scanOf(plan: PlanNode | undefined): string {
  let node = plan;
  while (node !== undefined && node["Node Type"] === "Limit") node = node.Plans?.[0];
  return node?.["Node Type"] ?? "?";
}

async function measure(dialect: "sqlite" | "postgres"): Promise<{ rows: Row[]; tail: string[] }> {
  const { deps, close } = await openBenchDeps(dialect);
  try {
    console.error(`${dialect}:`);
    const { ids, names } = await seed(deps);
    await deps.services.auth.ensureFirstAdmin("bench", "bench-password");
    const app = await buildApp(deps);
    const { access_token } = await deps.services.auth.login(
      { username: "bench", password: "bench-password" },
      "127.0.0.1",
    );
    const headers = { authorization: `Bearer ${access_token}` };
    const get = (url: string) => app.inject({ url, headers });
    const sampleNames = Array.from({ length: SAMPLES }, () => pick(names));
    const q4to7 = sampleNames.map((n) => substringOf(n, 4 + Math.floor(random() * 4)));
    const q3 = sampleNames.map((n) => substringOf(n, 3));
    const pages = Math.floor(USERS / 50);
    // warm-up: caches and JIT
    await timeEach(q4to7.slice(0, 200), (q) => get(`/api/users/search?q=${encodeURIComponent(q)}`));
    const searchTimes = await timeEach(q4to7, (q) => get(`/api/users/search?q=${encodeURIComponent(q)}`));
    // A deep page: 10,000 at 1M users (the issue's), the middle page of smaller runs.
    const deep = Math.min(10_000, Math.max(2, Math.floor(pages / 2)));
    const before = (await get(`/api/users?page=${deep - 1}&per_page=50`)).json() as { next_cursor: string };
    const rows: Row[] = [
      ["search name, 4-7 chars (API)", summarize(searchTimes)],
      [
        "search name, 3 chars (API)",
        summarize(await timeEach(q3, (q) => get(`/api/users/search?q=${encodeURIComponent(q)}`))),
      ],
      [
        "search telegram_id (API)",
        summarize(
          await timeEach(sampleNames, () =>
            get(`/api/users/search?q=${100_000_000 + Math.floor(random() * USERS)}`),
          ),
        ),
      ],
      ["get by id (API)", summarize(await timeEach(sampleNames, () => get(`/api/users/${pick(ids)}`)))],
      [
        "list first page, 50 (API)",
        summarize(await timeEach(sampleNames.slice(0, 500), () => get("/api/users?page=1&per_page=50"))),
      ],
      [
        `list page ${deep.toLocaleString("en")} by cursor, 50 (API)`,
        summarize(
          await timeEach(sampleNames.slice(0, 500), () =>
            get(`/api/users?cursor=${before.next_cursor}&per_page=50`),
          ),
        ),
      ],
      [
        `list page ${deep.toLocaleString("en")} by page number, 50 (API)`,
        summarize(
          await timeEach(sampleNames.slice(0, 200), () => get(`/api/users?page=${deep}&per_page=50`)),
        ),
      ],
      [
        "list random page, 50 (API)",
        summarize(
          await timeEach(sampleNames.slice(0, 200), () =>
            get(`/api/users?page=${1 + Math.floor(random() * pages)}&per_page=50`),
          ),
        ),
      ],
    ];
    const scanQueries = q4to7.slice(0, Math.min(50, SAMPLES));
    const scan =
      dialect === "postgres"
        ? (q: string) =>
            sql`SELECT id FROM users WHERE lower(name) LIKE ${`%${q}%`} LIMIT 100`.execute(deps.database.db)
        : (q: string) =>
            sql`SELECT id FROM users WHERE name LIKE ${`%${q}%`} LIMIT 100`.execute(deps.database.db);
    rows.push(["baseline: full scan, same name queries (SQL)", summarize(await timeEach(scanQueries, scan))]);
    const tail = dialect === "postgres" ? await postgresTail(deps, q4to7, searchTimes) : [];
    await app.close();
    return { rows, tail };
  } finally {
    await close();
  }
}

const startedAt = new Date().toISOString();
const machine = describeMachine([describeCode(join(import.meta.dirname, ".."))]);
const out: string[] = [
  `Run of ${startedAt}: \`npm run bench:users${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}\``,
  "",
  ...machine.map((line) => `- ${line}`),
  `- users: ${USERS.toLocaleString("en")}, samples per row: ${SAMPLES} (scan baseline: 50)`,
  "",
];
for (const dialect of values.dialects.split(",") as ("sqlite" | "postgres")[]) {
  const loadAtStart = loadavg()[0] ?? Number.NaN;
  const { rows, tail } = await measure(dialect);
  const indexed = rows[0]?.[1].p50 ?? Number.NaN;
  const scanned = rows.at(-1)?.[1].p50 ?? Number.NaN;
  out.push(
    `**${dialect}** (1-minute load average when its measurements began: ${loadAtStart.toFixed(2)})`,
    "",
    "| operation | n | p50 ms | p99 ms | mean ms |",
    "|---|---|---|---|---|",
  );
  for (const [name, s] of rows)
    out.push(`| ${name} | ${s.n} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${fmt(s.mean)} |`);
  out.push("", `Full scan p50 / indexed search p50: ${(scanned / indexed).toFixed(0)}x`, "", ...tail);
}
console.log(out.join("\n"));
if (values.write !== undefined) writeBetweenMarkers(values.write, "bench:users results", out.join("\n"));
