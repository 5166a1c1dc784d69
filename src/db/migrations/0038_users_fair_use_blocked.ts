// Issue 52: the fair-use tick (every traffic interval) judges the users with a stored state or a
// block. It found them with one statement whose OR spanned users and fair_use_state, so every tick
// read every user (98 ms at 100,000 users and 716 ms at 400,000 on SQLite, with nothing blocked). The
// blocked users are now found through this partial index (empty while nobody is blocked) and the
// warned ones from fair_use_state, so an idle tick costs what is blocked or warned, not the fleet.
import { type Kysely, sql } from "kysely";
import type { DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: DialectName): Promise<void> {
  await sql`CREATE INDEX users_fair_use_blocked ON users (fair_use_blocked_until)
    WHERE fair_use_blocked_until IS NOT NULL`.execute(db);
}
