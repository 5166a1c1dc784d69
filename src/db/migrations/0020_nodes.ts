// Nodes (issue 47): a server is reached `direct` (its core's gRPC API) or through its `node` agent.
// - servers.connection: 'direct' (the default, so existing servers change nothing) or 'node';
//   servers.node_base_config: the operator's base document for the agent's core config (JSON text,
//   null = the default of node/base-config.ts); servers.node_report: the agent's last report (JSON).
// - node_authority: the panel CA and the panel's client certificate (keys sealed like every secret).
// - node_enrollments: one-time join tokens, stored as SHA-256 hashes; single use, 1 hour.
// - node_certificates: the agent certificates a server accepts, by fingerprint ('current', or
//   'pending' while a renewal rolls in); re-enrolling or deleting the server deletes them (revocation).
// - node_traffic_receipts: the traffic batches already counted, by (server, journal epoch, sequence):
//   a batch delivered again after a lost acknowledgement is recognised and not counted twice.
import type { Kysely } from "kysely";
import { columnTypes, type DialectName } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  const t = columnTypes(dialect);
  await db.schema
    .alterTable("servers")
    .addColumn("connection", "text", (c) => c.notNull().defaultTo("direct"))
    .execute();
  await db.schema.alterTable("servers").addColumn("node_base_config", t.json).execute();
  await db.schema.alterTable("servers").addColumn("node_report", t.json).execute();

  await db.schema
    .createTable("node_authority")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("ca_cert", "text", (c) => c.notNull())
    .addColumn("ca_key_sealed", "text", (c) => c.notNull())
    .addColumn("client_cert", "text", (c) => c.notNull())
    .addColumn("client_key_sealed", "text", (c) => c.notNull())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .addColumn("updated_at", t.timestamp, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("node_enrollments")
    .addColumn("id", t.uuid, (c) => c.primaryKey())
    .addColumn("server_id", t.uuid, (c) => c.notNull().references("servers.id").onDelete("cascade"))
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("expires_at", t.timestamp, (c) => c.notNull())
    .addColumn("used_at", t.timestamp)
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema.createIndex("node_enrollments_server").on("node_enrollments").column("server_id").execute();

  await db.schema
    .createTable("node_certificates")
    .addColumn("fingerprint", "text", (c) => c.primaryKey())
    .addColumn("server_id", t.uuid, (c) => c.notNull().references("servers.id").onDelete("cascade"))
    .addColumn("serial", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("not_after", t.timestamp, (c) => c.notNull())
    .addColumn("created_at", t.timestamp, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("node_certificates_server")
    .on("node_certificates")
    .column("server_id")
    .execute();

  await db.schema
    .createTable("node_traffic_receipts")
    .addColumn("server_id", t.uuid, (c) => c.notNull().references("servers.id").onDelete("cascade"))
    .addColumn("epoch", "text", (c) => c.notNull())
    .addColumn("seq", "bigint", (c) => c.notNull())
    .addColumn("received_at", t.timestamp, (c) => c.notNull())
    .addPrimaryKeyConstraint("node_traffic_receipts_pk", ["server_id", "epoch", "seq"])
    .execute();
}
