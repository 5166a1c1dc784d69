// user_access.sync_revision: a counter bumped whenever something other than a push marks the grant's
// core state out of date (its user's admission changes, its credential is replaced). Every outcome a
// push or reconcile writes back is conditional on the revision it read (features/access
// access.repository.ts setSyncState): an outcome computed for a state that changed meanwhile is
// dropped and the grant stays 'pending' for the next tick. Without it a reconcile that removed a
// limited user could write 'synced' over the 'pending' of that user's reset (or the reverse: a user
// expired while being added stays on the core), and nothing would ever look at the grant again.
// The admission trigger of migration 0015 is replaced by one that also bumps the revision.
import { type Kysely, sql } from "kysely";
import type { DialectName } from "../dialect.ts";

const ADMITTED = "('active', 'on_hold')";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  await sql`ALTER TABLE user_access ADD COLUMN sync_revision integer NOT NULL DEFAULT 0`.execute(db);
  if (dialect === "sqlite") {
    await sql`DROP TRIGGER users_admission_changed`.execute(db);
    await sql`CREATE TRIGGER users_admission_changed AFTER UPDATE OF status ON users
      WHEN (OLD.status IN ${sql.raw(ADMITTED)}) IS NOT (NEW.status IN ${sql.raw(ADMITTED)})
      BEGIN
        UPDATE user_access SET sync_state = 'pending', sync_error = NULL, sync_revision = sync_revision + 1
          WHERE user_id = NEW.id AND is_active = 1;
      END`.execute(db);
  } else {
    await sql`CREATE OR REPLACE FUNCTION users_admission_changed() RETURNS trigger LANGUAGE plpgsql
      SET search_path FROM CURRENT AS $$ BEGIN
        UPDATE user_access SET sync_state = 'pending', sync_error = NULL, sync_revision = sync_revision + 1
          WHERE user_id = NEW.id AND is_active;
        RETURN NULL;
      END $$`.execute(db);
  }
}
