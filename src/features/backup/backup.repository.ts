// What a backup or restore asks of a database as a whole: is it empty, and one sealed value to try a
// key on. Sealed columns are found by their `_sealed` suffix in the live schema, so a table added
// later is covered without a list to keep.
import { type Kysely, sql } from "kysely";
import type { Database } from "../../db/types.ts";

export class BackupRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** No tables besides the migrator's (which an empty start may have created). */
  async isEmpty(): Promise<boolean> {
    const tables = await this.db.introspection.getTables();
    return tables.filter((table) => !table.isView).length === 0;
  }

  /** Names of the migrations the database has had (none when the migrator's table is missing). */
  async appliedMigrations(): Promise<string[]> {
    const tables = await this.db.introspection.getTables({ withInternalKyselyTables: true });
    if (!tables.some((table) => table.name === "kysely_migration")) return [];
    const result = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(
      this.db,
    );
    return result.rows.map((row) => row.name);
  }

  /** One non-null value of any `*_sealed` column, or undefined when the database holds none. */
  async findSealedValue(): Promise<string | undefined> {
    for (const table of await this.db.introspection.getTables()) {
      const qualified = table.schema === undefined ? table.name : `${table.schema}.${table.name}`;
      for (const column of table.columns.filter((c) => c.name.endsWith("_sealed"))) {
        const row = await sql<{ value: string }>`SELECT ${sql.ref(column.name)} AS value FROM ${sql.table(
          qualified,
        )} WHERE ${sql.ref(column.name)} IS NOT NULL LIMIT 1`
          .execute(this.db)
          .then((result) => result.rows[0]);
        if (row !== undefined) return row.value;
      }
    }
    return undefined;
  }
}
