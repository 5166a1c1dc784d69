// PostgreSQL: user search by name through the trigram index whatever the planner guesses. For
// `name ILIKE '%…%' LIMIT 100` it estimates 1 % of the rows for any fragment, so with the LIMIT a
// sequential scan looks cheapest; for a fragment that is rare in fact it reads the whole table
// (200-400 ms at 1,000,000 users): the search's whole tail (docs/benchmarks/HISTORY.md, User search). This
// function runs the same query with sequential scans off, so the plan is the GIN bitmap scan. It is
// used only for fragments pg_trgm takes trigrams from (users.repository.ts); for the others the
// index can only be read whole, slower than the scan. SQLite (FTS5) needs nothing.
import { type Kysely, sql } from "kysely";
import type { DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  if (dialect !== "postgres") return;
  await sql`CREATE FUNCTION users_with_name_like(pattern text, max_rows integer) RETURNS SETOF users
    LANGUAGE sql STABLE
    SET enable_seqscan = off
    SET search_path FROM CURRENT
    AS $$ SELECT * FROM users WHERE name ILIKE pattern ESCAPE '\\' LIMIT max_rows $$`.execute(db);
}
