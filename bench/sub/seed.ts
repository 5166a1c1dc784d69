// Seeds the subscription benchmark: one self-signed certificate, the starter templates, two servers
// and five inbounds through the services themselves (link_params computed by the inbound service,
// the cores unreachable so everything stays 'pending'), then N users with a grant on each inbound,
// written straight through Kysely in large batches because 5N grants through the API would take hours.
// Grant secrets and proxy ids come from the access and sync features' own helpers.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { sql } from "kysely";
import { loadSqlite } from "../../src/db/connection.ts";
import type { Deps } from "../../src/deps.ts";
import type { AccessRow } from "../../src/features/access/access.repository.ts";
import { newGrantRow } from "../../src/features/access/grant-rows.ts";
import type { LinkParams } from "../../src/features/inbounds/link-params.ts";
import { SubscriptionsRepository } from "../../src/features/subscriptions/subscriptions.repository.ts";
import { newCredential } from "../../src/features/sync/credentials.ts";
import { installStarters } from "../../src/features/templates/starters.ts";
import { freePort } from "../../test/support/ports.ts";

/** Two servers, five inbounds, mixed protocols: REALITY, TLS over WebSocket and TCP, Shadowsocks 2022. */
const LAYOUT = [
  {
    name: "de-fra-1",
    hostname: "fra1.vpn.example.net",
    inbounds: [
      { template: "vless-reality-vision", port: 443 },
      { template: "vless-ws-tls", port: 8443 },
      { template: "trojan-tcp-tls", port: 2083 },
    ],
  },
  {
    name: "nl-ams-1",
    hostname: "ams1.vpn.example.net",
    inbounds: [
      { template: "vmess-ws-tls", port: 443 },
      { template: "shadowsocks-2022", port: 8388 },
    ],
  },
] as const;

export const LINKS_PER_USER = LAYOUT.reduce((n, server) => n + server.inbounds.length, 0);

export type SeededInbound = { id: string; serverId: string; protocol: string; linkParams: LinkParams };
/** What a user's subscription is made of: the name, and the credentials in the order of `inbounds`. */
export type SeededUser = { name: string; credentials: string[] };
export type Seeded = {
  userIds: string[];
  inbounds: SeededInbound[];
  /** The users `keep` chose, by id: what the driver checks their answers against. */
  kept: Map<string, SeededUser>;
  seconds: number;
};

/** Users per statement (PostgreSQL) and per transaction (both). */
const USERS_PER_BATCH = 10_000;

export type UserRow = ReturnType<typeof userRow>;
/** Writes a batch of rows in one transaction, each dialect its fastest way. */
export type BulkWriter = {
  write(users: UserRow[], grants: AccessRow[]): Promise<void>;
  close(): Promise<void>;
};

/**
 * `keep(i)`: whether to remember the name and credentials of the i-th user (for checking answers).
 * `dataDir`: where the SQLite database is (its file: `portcullis.db`, as db/connection.ts names it).
 */
export async function seed(
  deps: Deps,
  users: number,
  keep: (index: number) => boolean,
  signal: AbortSignal,
  dataDir = ".",
  withHosts = false,
): Promise<Seeded> {
  const started = Date.now();
  const inbounds = await seedInbounds(deps);
  if (withHosts) await seedHostsAndHeaders(deps, inbounds);
  const writer =
    deps.database.dialect === "sqlite" ? sqliteWriter(join(dataDir, "portcullis.db")) : postgresWriter(deps);
  const userIds: string[] = [];
  const kept = new Map<string, SeededUser>();
  const base = Date.UTC(2026, 0, 1);
  try {
    for (let first = 0; first < users; first += USERS_PER_BATCH) {
      signal.throwIfAborted();
      const count = Math.min(USERS_PER_BATCH, users - first);
      const rows = Array.from({ length: count }, (_, k) => userRow(first + k, base));
      const credentials = rows.map(() => inbounds.map((inbound) => credentialFor(inbound)));
      // Granted one millisecond apart, in layout order: the order of the links in the body.
      const grants = rows.flatMap((user, k) =>
        inbounds.map((inbound, index) =>
          grantRow(user.id, inbound, credentials[k]?.[index] ?? "", base + (first + k) * 1000 + index),
        ),
      );
      await writer.write(rows, grants);
      for (const [k, row] of rows.entries()) {
        userIds.push(row.id);
        if (keep(first + k)) kept.set(row.id, { name: row.name, credentials: credentials[k] ?? [] });
      }
      if (first > 0 && first % 100_000 === 0) console.error(`  ${first.toLocaleString("en")} users…`);
      // SQLite writes synchronously: without a turn of the event loop no signal (Ctrl-C) is handled.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    await writer.close();
  }
  // The seed stands for data written long before the service started: the change rows its inserts
  // fired (one per grant) would otherwise be pruned by the service in the middle of a measurement.
  await deps.database.db.deleteFrom("subscription_changes").execute();
  if (deps.database.dialect === "postgres") {
    await sql`VACUUM ANALYZE users`.execute(deps.database.db);
    await sql`VACUUM ANALYZE user_access`.execute(deps.database.db);
    await sql`CHECKPOINT`.execute(deps.database.db).catch(() => undefined);
  }
  return { userIds, inbounds, kept, seconds: (Date.now() - started) / 1000 };
}

const USER_COLUMNS = ["id", "name", "comment", "telegram_id", "created_at", "updated_at"] as const;
const GRANT_COLUMNS = [
  "id",
  "user_id",
  "server_inbound_id",
  "server_id",
  "proxy_user_id",
  "credential",
  "level",
  "is_active",
  "sync_state",
  "sync_error",
  "uplink_bytes",
  "downlink_bytes",
  "created_at",
  "updated_at",
] as const;

/**
 * SQLite: a connection of its own (the service opens another later) with prepared single-row
 * inserts, one transaction per batch, a 2 GiB page cache (the grants' six B-trees take random keys)
 * and no fsync (a crash only loses the seed).
 */
export function sqliteWriter(file: string): BulkWriter {
  // The service's own choice of driver: better-sqlite3 12 aborts at exit on Node 24 (connection.ts).
  const SQLite = loadSqlite();
  const db = new SQLite(file);
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  db.pragma("synchronous = OFF");
  db.pragma("cache_size = -2097152");
  const placeholders = (n: number) => Array.from({ length: n }, () => "?").join(", ");
  const insertUser = db.prepare(
    `INSERT INTO users (${USER_COLUMNS.join(", ")}) VALUES (${placeholders(USER_COLUMNS.length)})`,
  );
  const insertGrant = db.prepare(
    `INSERT INTO user_access (${GRANT_COLUMNS.join(", ")}) VALUES (${placeholders(GRANT_COLUMNS.length)})`,
  );
  const batch = db.transaction((users: UserRow[], grants: AccessRow[]) => {
    for (const user of users) insertUser.run(USER_COLUMNS.map((c) => user[c]));
    for (const grant of grants) {
      insertGrant.run(GRANT_COLUMNS.map((c) => (c === "is_active" ? (grant[c] ? 1 : 0) : grant[c])));
    }
  });
  return {
    write: async (users, grants) => batch(users, grants),
    close: async () => void db.close(),
  };
}

/** PostgreSQL: one INSERT … SELECT FROM unnest(arrays) per table and batch. */
export function postgresWriter(deps: Deps): BulkWriter {
  const db = deps.database.db;
  const column = <T>(rows: readonly T[], name: keyof T) => rows.map((row) => row[name]);
  return {
    async write(users, grants) {
      await db.transaction().execute(async (trx) => {
        // The service's 30 s statement deadline is for requests; a seeding batch on a loaded
        // machine (the trigram index, the change trigger) may take longer. Still bounded.
        await sql`SET LOCAL statement_timeout = '600s'`.execute(trx);
        await sql`INSERT INTO users (id, name, comment, telegram_id, created_at, updated_at)
          SELECT * FROM unnest(${column(users, "id")}::uuid[], ${column(users, "name")}::text[],
            ${column(users, "comment")}::text[], ${column(users, "telegram_id")}::bigint[],
            ${column(users, "created_at")}::timestamptz[], ${column(users, "updated_at")}::timestamptz[])`.execute(
          trx,
        );
        await sql`INSERT INTO user_access (id, user_id, server_inbound_id, server_id, proxy_user_id, credential,
            level, is_active, sync_state, sync_error, uplink_bytes, downlink_bytes, created_at, updated_at)
          SELECT * FROM unnest(${column(grants, "id")}::uuid[], ${column(grants, "user_id")}::uuid[],
            ${column(grants, "server_inbound_id")}::uuid[], ${column(grants, "server_id")}::uuid[],
            ${column(grants, "proxy_user_id")}::text[], ${column(grants, "credential")}::text[],
            ${column(grants, "level")}::integer[], ${column(grants, "is_active")}::boolean[],
            ${column(grants, "sync_state")}::text[], ${column(grants, "sync_error")}::text[],
            ${column(grants, "uplink_bytes")}::bigint[], ${column(grants, "downlink_bytes")}::bigint[],
            ${column(grants, "created_at")}::timestamptz[], ${column(grants, "updated_at")}::timestamptz[])`.execute(
          trx,
        );
      });
    },
    close: async () => {},
  };
}

async function seedInbounds(deps: Deps): Promise<SeededInbound[]> {
  const { templates, certificates, servers, inbounds } = deps.services;
  await installStarters(templates);
  // A wildcard certificate: each server's links then carry its own hostname as SNI.
  const certificate = await certificates.create({
    name: "bench wildcard",
    cert_type: "self_signed",
    domain: "*.vpn.example.net",
  });
  const seeded: SeededInbound[] = [];
  for (const layout of LAYOUT) {
    // Nothing listens on this port: rendering a subscription never contacts a core.
    const server = await servers.create({
      name: layout.name,
      hostname: layout.hostname,
      grpc_hostname: "127.0.0.1",
      grpc_port: await freePort(),
      default_certificate_id: certificate.id,
    });
    for (const { template: name, port } of layout.inbounds) {
      const template = await templates.findByName(name);
      if (template === undefined) throw new Error(`starter template ${name} is not installed`);
      const created = await inbounds.create(server.id, { template_id: template.id, port });
      const row = await deps.database.db
        .selectFrom("server_inbounds")
        .select("link_params")
        .where("id", "=", created.id)
        .executeTakeFirstOrThrow();
      const linkParams = JSON.parse(row.link_params) as LinkParams;
      seeded.push({ id: created.id, serverId: server.id, protocol: linkParams.protocol, linkParams });
    }
  }
  return seeded;
}

/**
 * `--hosts` (issue 48): two hosts on every inbound (a CDN name and a bare IP, remarks with the
 * variables filled when the layout is compiled) and three operator headers whose values are filled
 * per user and answer. The seeded link parameters get the hosts attached as /sub reads them, so the
 * answers are checked against the pure renderer as before.
 */
async function seedHostsAndHeaders(deps: Deps, inbounds: SeededInbound[]): Promise<void> {
  for (const inbound of inbounds) {
    await deps.services.hosts.create(inbound.serverId, inbound.id, {
      address: "cdn.example.org",
      remark: "{SERVER} CDN {PROTOCOL} {TRANSPORT}",
    });
    await deps.services.hosts.create(inbound.serverId, inbound.id, {
      address: "203.0.113.9",
      remark: "{SERVER} IP",
    });
  }
  const read = new SubscriptionsRepository(deps.database.db, deps.database.dialect);
  const withHosts = new Map((await read.listInbounds(inbounds.map((i) => i.id))).map((row) => [row.id, row]));
  for (const inbound of inbounds)
    inbound.linkParams = withHosts.get(inbound.id)?.linkParams ?? inbound.linkParams;
  await deps.services.subscriptionSettings.update({
    custom_headers: [
      { name: "x-days-left", value: "{DAYS_LEFT}" },
      { name: "x-data-left", value: "{DATA_LEFT}" },
      { name: "x-subscription", value: "{SUBSCRIPTION_URL}" },
    ],
  });
}

export function userRow(i: number, base: number) {
  const now = new Date(base + i * 1000).toISOString();
  // One in ten names is not ASCII, so the Content-Disposition fallback path is exercised too.
  const name = i % 10 === 0 ? `Пользователь ${i}` : `user-${String(i).padStart(6, "0")}`;
  return { id: randomUUID(), name, comment: null, telegram_id: null, created_at: now, updated_at: now };
}

/** The sync feature's own secret for the inbound's protocol. */
function credentialFor(inbound: SeededInbound): string {
  return newCredential(inbound.linkParams.protocol, inbound.linkParams.shadowsocksMethod);
}

function grantRow(userId: string, inbound: SeededInbound, credential: string, createdMs: number): AccessRow {
  // The access feature's own row factory: state 'pending', as a grant to a never-reached core holds.
  const ref = { id: inbound.id, server_id: inbound.serverId, link_params: inbound.linkParams };
  // The credential drawn beforehand (the seed remembers some to check answers) replaces the drawn one.
  return { ...newGrantRow(ref, userId, 0, new Date(createdMs).toISOString(), new Set()), credential };
}
