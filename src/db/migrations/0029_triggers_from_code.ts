// Every trigger (and PostgreSQL trigger function) re-created from its declaration in db/triggers.ts,
// the one place they are declared from now on; the migrations that first made them stay as they were.
// Same behaviour as before, one text per trigger: PostgreSQL's row-count functions now pin their
// search_path like the others.
import type { Kysely } from "kysely";
import type { DialectName } from "../dialect.ts";
import { installTriggers } from "../triggers.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await installTriggers(db, dialect, "0029_triggers_from_code");
}
