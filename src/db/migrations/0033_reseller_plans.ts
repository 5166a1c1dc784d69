// Issue 49's gaps: plans set a user's device limit too (users.device_limit landed with devices after
// plans: migration 0032), and an admin may be limited to some plans (admins.allowed_plan_ids: a JSON
// array of plan ids, null: any plan), enforced wherever a plan reaches a user the admin acts on:
// create from a plan, renew, next_plan_id (docs/RESELLERS.md).
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await sql`ALTER TABLE plans ADD COLUMN device_limit integer CHECK (device_limit IS NULL OR device_limit >= 0)`.execute(
    db,
  );
  await db.schema.alterTable("admins").addColumn("allowed_plan_ids", t.json).execute();
}
