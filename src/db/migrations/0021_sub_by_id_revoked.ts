// users.sub_by_id_revoked_at (issue 45, finding 8): set when the user's subscription is revoked.
// From then on /sub/{user_id} answers 404 for that user whatever allow_by_id says: revoking must
// close every URL the user's subscription was reachable by, and user ids are visible to every
// role and in webhooks. The same UPDATE rotates sub_token, whose trigger (migration 0014) tells
// every instance to drop the user's record, so no instance keeps answering the id form from memory.
import { type Kysely, sql } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await sql`ALTER TABLE users ADD COLUMN sub_by_id_revoked_at ${sql.raw(t.timestamp as string)}`.execute(db);
}
