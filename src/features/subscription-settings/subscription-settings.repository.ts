// The one row of subscription settings (migration 0014); its writes fire the subscription change feed.
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

export class SubscriptionSettingsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async read(): Promise<Record<string, unknown> | undefined> {
    const row = await this.db
      .selectFrom("subscription_settings")
      .select("data")
      .where("id", "=", 1)
      .executeTakeFirst();
    return row === undefined ? undefined : (JSON.parse(row.data) as Record<string, unknown>);
  }

  async write(data: Record<string, unknown>, now: string): Promise<void> {
    const text = JSON.stringify(data);
    await this.db
      .insertInto("subscription_settings")
      .values({ id: 1, data: text, updated_at: now })
      .onConflict((oc) => oc.column("id").doUpdateSet({ data: text, updated_at: now }))
      .execute();
  }
}
