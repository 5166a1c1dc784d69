// Certificates (chain in clear, private key sealed with the secret box) and one ACME account per
// directory URL (account key sealed). `renewing_since` is the lease that keeps two renewals of one
// certificate from running at once, across instances too.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .createTable("certificates")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("cert_type", "text", (c) => c.notNull())
    .addColumn("origin", "text", (c) => c.notNull())
    .addColumn("domain", "text", (c) => c.notNull())
    .addColumn("auto_renew", t.boolean, (c) => c.notNull())
    .addColumn("issuance", "text", (c) => c.notNull())
    .addColumn("certificate_pem", "text")
    .addColumn("private_key_sealed", "text")
    .addColumn("not_before", t.timestamp)
    .addColumn("not_after", t.timestamp)
    .addColumn("issuer", "text")
    .addColumn("subject_alt_names", t.json, (c) => c.notNull())
    .addColumn("fingerprint_sha256", "text")
    .addColumn("serial", "text")
    .addColumn("last_error", "text")
    .addColumn("failure_count", "integer", (c) => c.notNull())
    .addColumn("last_attempt_at", t.timestamp)
    .addColumn("renewing_since", t.timestamp)
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("certificates_created_at_id")
    .on("certificates")
    .columns(["created_at", "id"])
    .execute();

  await db.schema
    .createTable("acme_accounts")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("directory_url", "text", (c) => c.notNull().unique())
    .addColumn("account_key_sealed", "text", (c) => c.notNull())
    .addColumn("account_url", "text")
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();
}
