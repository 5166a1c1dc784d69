// ACME accounts in SQL: one per directory URL, its key sealed by the secret box. Created once; two
// instances racing to create it agree on whichever row landed first.
import type { Kysely } from "kysely";
import type { Database } from "../../db/types.ts";

export type AcmeAccountRow = {
  id: string;
  directory_url: string;
  account_key_sealed: string;
  account_url: string | null;
};

export class AcmeAccountsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async findAccount(directoryUrl: string): Promise<AcmeAccountRow | undefined> {
    return this.db
      .selectFrom("acme_accounts")
      .select(["id", "directory_url", "account_key_sealed", "account_url"])
      .where("directory_url", "=", directoryUrl)
      .executeTakeFirst();
  }

  /** Inserts unless an account for the directory exists; returns the one stored either way. */
  async insertAccountOnce(account: AcmeAccountRow, now: string): Promise<AcmeAccountRow> {
    await this.db
      .insertInto("acme_accounts")
      .values({ ...account, created_at: now, updated_at: now })
      .onConflict((conflict) => conflict.column("directory_url").doNothing())
      .execute();
    const stored = await this.findAccount(account.directory_url);
    if (stored === undefined) throw new Error("ACME account vanished right after it was stored");
    return stored;
  }

  async setAccountUrl(id: string, accountUrl: string, now: string): Promise<void> {
    await this.db
      .updateTable("acme_accounts")
      .set({ account_url: accountUrl, updated_at: now })
      .where("id", "=", id)
      .execute();
  }
}
