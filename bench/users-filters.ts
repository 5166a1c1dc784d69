// `npm run bench:users-filters [-- --users N --samples K --dialects sqlite,postgres --write docs/benchmarks/users-filters.md]`:
// seeds N users (default 1,000,000) with lifecycle fields (statuses, limits, usage, expiries, some
// never expiring) into each dialect, then reports p50/p95/p99 of GET /api/users with the issue-12
// filters and sorts through the HTTP layer (in-process inject): first pages (which count the matching
// users for `total`), next pages by cursor (which do not), a page by number, the counts alone, and
// bulk actions over 10,000 ids. PostgreSQL: BENCH_PG_URL (default postgres://root@127.0.0.1:5432/postgres)
// is used to create and drop a scratch database.
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { buildApp } from "../src/app.ts";
import type { Deps } from "../src/deps.ts";
import { UserFiltersRepository } from "../src/features/users/user-filters.repository.ts";
import { listFilterOf } from "../src/features/users/user-list.service.ts";
import { openBenchDeps } from "./lib/bench-deps.ts";
import { describeCode, describeMachine } from "./lib/machine.ts";
import { writeBetweenMarkers } from "./lib/markers.ts";
import { fmt, prng, timeEach } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    users: { type: "string", default: "1000000" },
    samples: { type: "string", default: "200" },
    dialects: { type: "string", default: "sqlite,postgres" },
    write: { type: "string" },
  },
});
const USERS = Number(values.users);
const SAMPLES = Number(values.samples);
const DAY = 86_400_000;
const GB = 2 ** 30;
const random = prng(12);
const NOW = Date.now();

/** A user as an operator's fleet would hold them: the status follows the numbers, as the lifecycle keeps it. */
function makeUser(i: number) {
  const created = new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
  const limit = random() < 0.7 ? Math.floor((1 + random() * 99) * GB) : null;
  const used = Math.floor((limit ?? 50 * GB) * random() * 1.15);
  const expire = random() < 0.6 ? new Date(NOW + (random() * 425 - 60) * DAY).toISOString() : null;
  let status: "active" | "disabled" | "limited" | "expired" | "on_hold" = "active";
  const roll = random();
  if (roll < 0.04) status = "disabled";
  else if (roll < 0.05) status = "on_hold";
  else if (expire !== null && expire <= new Date(NOW).toISOString()) status = "expired";
  else if (limit !== null && used >= limit) status = "limited";
  return {
    id: randomUUID(),
    name: `user ${i}`,
    comment: null,
    telegram_id: null,
    created_at: created,
    updated_at: created,
    status,
    data_limit_bytes: limit,
    used_bytes: used,
    lifetime_used_bytes: used,
    expire_at: expire,
    on_hold_duration_seconds: status === "on_hold" ? 30 * 86_400 : null,
  };
}

async function seed(deps: Deps): Promise<string[]> {
  const ids: string[] = [];
  const started = Date.now();
  const batch = 1000;
  for (let offset = 0; offset < USERS; offset += 20 * batch) {
    await deps.database.db.transaction().execute(async (trx) => {
      for (let b = offset; b < Math.min(USERS, offset + 20 * batch); b += batch) {
        const rows = Array.from({ length: Math.min(batch, USERS - b) }, (_, k) => makeUser(b + k));
        if (ids.length < 50_000) ids.push(...rows.map((r) => r.id));
        await trx.insertInto("users").values(rows).execute();
      }
    });
  }
  if (deps.database.dialect === "postgres") {
    await sql`VACUUM ANALYZE users`.execute(deps.database.db);
    await sql`CHECKPOINT`.execute(deps.database.db).catch(() => undefined);
  }
  // SQLite: no ANALYZE, as the service never runs one (with sqlite_stat1 its planner underrates
  // `expire_at IS NULL` and sorts the never-expiring users instead of reading them in order).
  console.error(`  seeded ${USERS} users in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return ids;
}

type Stat = { n: number; p50: number; p95: number; p99: number; matched: string };

function stat(samples: number[], matched = ""): Stat {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { n: sorted.length, p50: at(0.5), p95: at(0.95), p99: at(0.99), matched };
}

async function measure(dialect: "sqlite" | "postgres"): Promise<[string, Stat][]> {
  const { deps, close } = await openBenchDeps(dialect);
  try {
    console.error(`${dialect}:`);
    const ids = await seed(deps);
    await deps.services.auth.ensureFirstAdmin("bench", "bench-password");
    const app = await buildApp(deps);
    const { access_token } = await deps.services.auth.login(
      { username: "bench", password: "bench-password" },
      "127.0.0.1",
    );
    const headers = { authorization: `Bearer ${access_token}` };
    const get = async (url: string) => {
      const res = await app.inject({ url, headers });
      if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
      return res.json() as { total: number; next_cursor: string | null; items: unknown[] };
    };
    const inputs = Array.from({ length: SAMPLES }, (_, i) => i);
    const soon = () => new Date(NOW + (1 + Math.floor(random() * 30)) * DAY).toISOString();
    const percent = () => 50 + Math.floor(random() * 60);
    /** A first page (counts) and the page after it by cursor (does not), for query builders. */
    const rows: [string, Stat][] = [];
    const firstAndNext = async (label: string, query: () => string) => {
      await timeEach(inputs.slice(0, 20), () => get(`/api/users?${query()}&per_page=50`)); // warm-up
      let total = 0;
      const cursors: [string, string][] = [];
      const first = await timeEach(inputs, async () => {
        const q = query();
        const page = await get(`/api/users?${q}&per_page=50`);
        total = page.total;
        if (page.next_cursor !== null) cursors.push([q, page.next_cursor]);
      });
      rows.push([`${label}: first page (with total)`, stat(first, `${total.toLocaleString("en")}`)]);
      if (cursors.length > 0) {
        const next = await timeEach(cursors, ([q, cursor]) =>
          get(`/api/users?${q}&per_page=50&cursor=${cursor}`),
        );
        rows.push([`${label}: next page by cursor`, stat(next)]);
      }
    };
    await firstAndNext("status=limited", () => "status=limited");
    await firstAndNext("status=limited,expired", () => "status=limited,expired");
    await firstAndNext("status=active (most users)", () => "status=active");
    await firstAndNext(
      "expires_before=+1..30 days, sort=expire_at",
      () => `expires_before=${soon()}&sort=expire_at`,
    );
    await firstAndNext("expires_before=+1..30 days (created_at order)", () => `expires_before=${soon()}`);
    await firstAndNext(
      "used_over_percent=50..109, sort=used_bytes desc",
      () => `used_over_percent=${percent()}&sort=used_bytes&order=desc`,
    );
    await firstAndNext(
      "used_over_percent=50..109 (created_at order)",
      () => `used_over_percent=${percent()}`,
    );
    await firstAndNext("status=active&used_over_percent=80", () => "status=active&used_over_percent=80");
    await firstAndNext("sort=used_bytes desc", () => "sort=used_bytes&order=desc");
    await firstAndNext("sort=expire_at asc", () => "sort=expire_at");
    await firstAndNext("sort=expire_at desc (never-expiring first)", () => "sort=expire_at&order=desc");
    rows.push([
      "status=limited,expired: page 20 by number",
      stat(await timeEach(inputs, () => get("/api/users?status=limited,expired&page=20&per_page=50"))),
    ]);
    const repo = new UserFiltersRepository(deps.database.db, deps.database.dialect);
    for (const [label, filter] of [
      ["count alone: status=active", { status: "active" }],
      ["count alone: status=limited", { status: "limited" }],
      ["count alone: used_over_percent=80", { used_over_percent: 80 }],
    ] as const) {
      let n = 0;
      const times = await timeEach(inputs.slice(0, 50), async () => {
        n = await repo.count(listFilterOf(filter));
      });
      rows.push([label, stat(times, n.toLocaleString("en"))]);
    }
    const bulk = async (body: unknown) => {
      const res = await app.inject({
        method: "POST",
        url: "/api/users/bulk-actions",
        headers,
        payload: body as object,
      });
      if (res.statusCode !== 200) throw new Error(`bulk: ${res.statusCode} ${res.body}`);
      return res.json() as { changed: number };
    };
    const slices = Math.max(1, Math.floor(ids.length / 10_000));
    const tenThousand = (k: number) => ids.slice((k % slices) * 10_000, (k % slices) * 10_000 + 10_000);
    let changed = 0;
    rows.push([
      "bulk extend_expiry, 10,000 ids",
      stat(
        await timeEach([0, 1, 2, 3, 4], async (k) => {
          changed = (await bulk({ action: { type: "extend_expiry", days: 1 }, ids: tenThousand(k) })).changed;
        }),
        `changed ${changed}`,
      ),
    ]);
    rows.push([
      "bulk reset_usage, 10,000 ids",
      stat(
        await timeEach([0, 1, 2, 3, 4], async (k) => {
          changed = (await bulk({ action: { type: "reset_usage" }, ids: tenThousand(k) })).changed;
        }),
        `changed ${changed}`,
      ),
    ]);
    await app.close();
    return rows;
  } finally {
    await close();
  }
}

const startedAt = new Date().toISOString();
const machine = describeMachine([describeCode(join(import.meta.dirname, ".."))]);
const out: string[] = [
  `Run of ${startedAt}: \`npm run bench:users-filters${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}\``,
  "",
  ...machine.map((line) => `- ${line}`),
  `- users: ${USERS.toLocaleString("en")}, samples per row: ${SAMPLES} (counts alone: ${Math.min(50, SAMPLES)}; bulk: 5), per_page 50`,
  "",
];
for (const dialect of values.dialects.split(",") as ("sqlite" | "postgres")[]) {
  const loadAtStart = loadavg()[0] ?? Number.NaN;
  const rows = await measure(dialect);
  out.push(
    `**${dialect}** (1-minute load average when its measurements began: ${loadAtStart.toFixed(2)})`,
    "",
    "| request | n | p50 ms | p95 ms | p99 ms | matching users |",
    "|---|---|---|---|---|---|",
  );
  for (const [name, s] of rows) {
    out.push(`| ${name} | ${s.n} | ${fmt(s.p50)} | ${fmt(s.p95)} | ${fmt(s.p99)} | ${s.matched} |`);
  }
  out.push("");
}
console.log(out.join("\n"));
if (values.write !== undefined)
  writeBetweenMarkers(values.write, "bench:users-filters results", out.join("\n"));
