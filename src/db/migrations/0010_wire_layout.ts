// Wire layouts (issue 18): which field numbering a server's core speaks (detected by the layout
// probe, or pinned by the operator) and which optional calls it answers. A core upgraded in place
// changes both, so they are re-detected after every core restart unless pinned.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema.alterTable("servers").addColumn("wire_layout", "text").execute();
  await db.schema
    .alterTable("servers")
    .addColumn("wire_layout_pinned", t.boolean, (c) => c.notNull().defaultTo(false))
    .execute();
  // JSON array of capability names; null until detected.
  await db.schema.alterTable("servers").addColumn("core_capabilities", t.json).execute();
  // The layout the core's full state was last applied with: another one now means re-apply it all.
  await db.schema.alterTable("server_sync").addColumn("applied_wire_layout", "text").execute();
}
