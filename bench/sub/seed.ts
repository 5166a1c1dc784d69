// Seeds the subscription benchmark: one self-signed certificate, the starter templates, two servers
// and five inbounds through the services themselves (link_params computed by the inbound service,
// the cores unreachable so everything stays 'pending'), then N users with a grant on each inbound,
// written straight through Kysely in large batches because 5N grants through the API would take hours.
// Grant secrets and proxy ids come from the access feature's own helpers.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Deps } from "../../src/deps.ts";
import type { AccessRow } from "../../src/features/access/access.repository.ts";
import { newGrantRow } from "../../src/features/access/bulk-grant.ts";
import { newCredential } from "../../src/features/access/credentials.ts";
import type { LinkParams } from "../../src/features/inbounds/link-params.ts";
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

const USERS_PER_BATCH = 1000;
const BATCHES_PER_TRANSACTION = 10;

/** `keep(i)`: whether to remember the name and credentials of the i-th user (for checking answers). */
export async function seed(
  deps: Deps,
  users: number,
  keep: (index: number) => boolean,
  signal: AbortSignal,
): Promise<Seeded> {
  const started = Date.now();
  const inbounds = await seedInbounds(deps);
  // The seeding connection only (the measured service opens its own): a 256 MiB page cache, as the
  // grants' six B-trees take random keys and the ~2 MB default makes every batch re-read pages.
  if (deps.database.dialect === "sqlite") await sql`PRAGMA cache_size = -262144`.execute(deps.database.db);
  const userIds: string[] = [];
  const kept = new Map<string, SeededUser>();
  const base = Date.UTC(2026, 0, 1);
  for (let offset = 0; offset < users; offset += USERS_PER_BATCH * BATCHES_PER_TRANSACTION) {
    signal.throwIfAborted();
    await deps.database.db.transaction().execute(async (trx) => {
      const end = Math.min(users, offset + USERS_PER_BATCH * BATCHES_PER_TRANSACTION);
      for (let first = offset; first < end; first += USERS_PER_BATCH) {
        const count = Math.min(USERS_PER_BATCH, end - first);
        const rows = Array.from({ length: count }, (_, k) => userRow(first + k, base));
        await trx.insertInto("users").values(rows).execute();
        const credentials = rows.map(() => inbounds.map((inbound) => credentialFor(inbound)));
        for (const [index, inbound] of inbounds.entries()) {
          // Granted one millisecond apart, in layout order: the order of the links in the body.
          const grants = rows.map((user, k) =>
            grantRow(user.id, inbound, credentials[k]?.[index] ?? "", base + (first + k) * 1000 + index),
          );
          await trx.insertInto("user_access").values(grants).execute();
        }
        for (const [k, row] of rows.entries()) {
          userIds.push(row.id);
          if (keep(first + k)) kept.set(row.id, { name: row.name, credentials: credentials[k] ?? [] });
        }
      }
    });
    if (offset > 0 && offset % 50_000 === 0) console.error(`  ${offset.toLocaleString("en")} users…`);
  }
  // The seed stands for data written long before the service started: the change rows its inserts
  // fired (one per grant) would otherwise be pruned by the service in the middle of a measurement.
  await deps.database.db.deleteFrom("subscription_changes").execute();
  if (deps.database.dialect === "postgres") {
    await sql`VACUUM ANALYZE users`.execute(deps.database.db);
    await sql`VACUUM ANALYZE user_access`.execute(deps.database.db);
  }
  return { userIds, inbounds, kept, seconds: (Date.now() - started) / 1000 };
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

function userRow(i: number, base: number) {
  const now = new Date(base + i * 1000).toISOString();
  // One in ten names is not ASCII, so the Content-Disposition fallback path is exercised too.
  const name = i % 10 === 0 ? `Пользователь ${i}` : `user-${String(i).padStart(6, "0")}`;
  return { id: randomUUID(), name, comment: null, telegram_id: null, created_at: now, updated_at: now };
}

/** The access feature's own secret for the inbound's protocol. */
function credentialFor(inbound: SeededInbound): string {
  return newCredential(inbound.linkParams.protocol, inbound.linkParams.shadowsocksMethod);
}

function grantRow(userId: string, inbound: SeededInbound, credential: string, createdMs: number): AccessRow {
  // The access feature's own row factory: state 'pending', as a grant to a never-reached core holds.
  const ref = { id: inbound.id, server_id: inbound.serverId };
  return newGrantRow(ref, userId, 0, credential, new Date(createdMs).toISOString());
}
