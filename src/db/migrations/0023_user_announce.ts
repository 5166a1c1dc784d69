// users.announce (issue 48): a user's own Announce header (Happ, v2RayTun), sent instead of the
// subscription settings' one. /sub shows it, so changing it adds a subscription_changes row (as a
// rename does, migration 0008): every instance drops the user's record at once.
import { type Kysely, sql } from "kysely";
import type { DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await sql`ALTER TABLE users ADD COLUMN announce text`.execute(db);
  if (dialect === "sqlite") {
    await sql`CREATE TRIGGER subscription_changes_user_announce AFTER UPDATE OF announce ON users
      WHEN OLD.announce IS NOT NEW.announce
      BEGIN INSERT INTO subscription_changes (user_id) VALUES (NEW.id); END`.execute(db);
  } else {
    // subscription_changes_row() (migration 0008) adds a row for NEW.id of users.
    await sql`CREATE TRIGGER subscription_changes_user_announce AFTER UPDATE OF announce ON users
      FOR EACH ROW WHEN (OLD.announce IS DISTINCT FROM NEW.announce)
      EXECUTE FUNCTION subscription_changes_row()`.execute(db);
  }
}
