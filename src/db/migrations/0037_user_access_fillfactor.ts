// Issue 52: every traffic fold rewrites the byte counters of each grant with traffic. On PostgreSQL a
// full page has no room for the new row version, so each such update went to another page and wrote
// an entry in every index of user_access (not HOT). With pages filled to 60 % the new version fits on
// the same page (none of the updated columns is indexed), so the update is HOT. Measured with
// `BENCH_FILLFACTOR=60 npm run bench:traffic -- --users 100000 --dialects postgres --fold once --polls 4`
// (docs/benchmarks/traffic.md): the fold's `UPDATE user_access` 19.2 → 6.1 s. The setting applies to
// pages written from now on (new grants, and rows moved by updates); an existing table's full pages
// get the room as they are rewritten (VACUUM FULL or pg_repack does it at once). SQLite: nothing.
import { type Kysely, sql } from "kysely";
import type { DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  if (dialect !== "postgres") return;
  await sql`ALTER TABLE user_access SET (fillfactor = 60)`.execute(db);
}
