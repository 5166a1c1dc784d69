// Access grants in SQL: one row per (user, inbound) with the user's id on the core, their secret and
// the sync state. The unique indexes make a duplicate grant a 409 and a reused credential a retry.
import { type Kysely, type Selectable, sql } from "kysely";
import { dialectOf, IDS_PER_STATEMENT, ROWS_PER_INSERT, read } from "../../db/dialect.ts";
import { admittedSql } from "../../db/triggers.ts";
import type { Database, UserAccessTable } from "../../db/types.ts";
import { UniqueViolationError } from "../../db/unique-violation.ts";
import type { SyncState } from "../../domain/sync.ts";
import { ADMITTED_STATUSES } from "../../domain/users.ts";
import { syncBreather } from "../../lib/breather.ts";
import { ConflictError } from "../../lib/errors.ts";
import { chunks } from "../../lib/limiter.ts";
import { type HostRow, hostSpecOf } from "../inbounds/hosts.repository.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import type { GrantRevision, SyncGrant } from "../sync/stores.ts";

/** A grant row: what provisioning reads and writes (sync's SyncGrant), plus traffic and timestamps. */
export type AccessRow = SyncGrant & {
  /** Given to the user directly; false: held only through groups (migration 0026). */
  is_own: boolean;
  uplink_bytes: number;
  downlink_bytes: number;
  created_at: string;
  updated_at: string;
};

/** A grant with what its link and config need: the inbound's tag and link parameters, the server name. */
export type AccessLinkRow = AccessRow & {
  inbound_tag: string;
  inbound_is_active: boolean;
  /** With the inbound's hosts attached when it has any (host-entries.ts). */
  link_params: LinkParams;
  server_name: string;
  server_status: string;
  /** What the per-user remark variables read (lib/user-values.ts). */
  user: {
    name: string;
    status: string;
    dataLimitBytes: number | null;
    usedBytes: number;
    expireAt: string | null;
  };
};

/** Thrown when the new grant's credential is taken on the inbound; the service draws another. */
export class CredentialTakenError extends Error {}

/**
 * How a server's grants are read for a reconcile (#byServerInPages). 250 a page: a page of 1,000 took
 * 40–460 ms of SQLite under load (the join to users decides admission), and four servers reconcile at
 * once; a page of 250 is about a quarter of that, and each page waits its own turn of the event loop
 * (lib/breather.ts). `betweenPages` is awaited after each full page (tests change grants there).
 */
export type GrantPaging = { grantsPerPage: number; betweenPages: () => Promise<void> | undefined };
const GRANT_PAGING: GrantPaging = { grantsPerPage: 250, betweenPages: syncBreather };
/** Ids per page of an inbound's on-core ids (listOnCoreIds). */
const IDS_PER_PAGE = 1000;

export class AccessRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly paging: GrantPaging = GRANT_PAGING,
  ) {}

  /** onlyOnCore: active grants of admitted users (active, on_hold): what the inbound's core holds. */
  async listByInbound(inboundId: string, onlyOnCore = false): Promise<AccessRow[]> {
    let query = this.#withAdmission().where("a.server_inbound_id", "=", inboundId);
    if (onlyOnCore) {
      query = query
        .where("a.is_active", "=", true)
        .where("u.status", "in", ADMITTED)
        .where("u.fair_use_blocked_until", "is", null);
    }
    const rows = await query.orderBy("a.created_at").orderBy("a.id").execute();
    return rows.map(toRow);
  }

  /** Grants with whether their user is admitted to cores (the reconciler's and applyInbound's reads). */
  #withAdmission() {
    return this.db
      .selectFrom("user_access as a")
      .innerJoin("users as u", "u.id", "a.user_id")
      .selectAll("a")
      .select(
        sql<boolean | number>`${sql.raw(admittedSql("u.status"))} and u.fair_use_blocked_until is null`.as(
          "is_user_admitted",
        ),
      );
  }

  /**
   * Read in pages by user (keyset on the unique (server_inbound_id, user_id)), the event loop let in
   * between: a full apply reads its inbound's 10,000+ ids after the push, which as one statement
   * held the process for about 100 ms under load.
   */
  async listOnCoreIds(inboundId: string): Promise<string[]> {
    const out: string[] = [];
    let after: string | undefined;
    for (;;) {
      let query = this.db
        .selectFrom("user_access as a")
        .innerJoin("users as u", "u.id", "a.user_id")
        .select(["a.id", "a.user_id"])
        .where("a.server_inbound_id", "=", inboundId)
        .where("a.is_active", "=", true)
        .where("u.status", "in", ADMITTED)
        .where("u.fair_use_blocked_until", "is", null);
      if (after !== undefined) query = query.where("a.user_id", ">", after);
      const rows = await query.orderBy("a.user_id").limit(IDS_PER_PAGE).execute();
      for (const row of rows) out.push(row.id);
      const last = rows.at(-1);
      if (last === undefined || rows.length < IDS_PER_PAGE) return out;
      after = last.user_id;
      await syncBreather();
    }
  }

  async listUnadmittedUserIds(userIds: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (const part of chunks([...new Set(userIds)], IDS_PER_STATEMENT)) {
      const rows = await this.db
        .selectFrom("users")
        .select("id")
        .where("id", "in", part)
        .where((eb) =>
          eb.or([eb("status", "not in", ADMITTED), eb("fair_use_blocked_until", "is not", null)]),
        )
        .execute();
      for (const row of rows) out.add(row.id);
    }
    return out;
  }

  async listByUser(userId: string): Promise<AccessRow[]> {
    const rows = await this.db
      .selectFrom("user_access")
      .selectAll()
      .where("user_id", "=", userId)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(toRow);
  }

  async findById(id: string): Promise<AccessRow | undefined> {
    const row = await this.db.selectFrom("user_access").selectAll().where("id", "=", id).executeTakeFirst();
    return row && toRow(row);
  }

  /** The grant on an inbound of a user, by the user's id or by the grant's proxy_user_id. */
  async findOnInbound(
    inboundId: string,
    by: { userId: string } | { proxyUserId: string },
  ): Promise<AccessRow | undefined> {
    let query = this.db.selectFrom("user_access").selectAll().where("server_inbound_id", "=", inboundId);
    query =
      "userId" in by
        ? query.where("user_id", "=", by.userId)
        : query.where("proxy_user_id", "=", by.proxyUserId);
    const row = await query.executeTakeFirst();
    return row && toRow(row);
  }

  async insertAccess(row: AccessRow): Promise<void> {
    await this.db
      .insertInto("user_access")
      .values(row)
      .execute()
      .catch((error: unknown) => {
        if (!(error instanceof UniqueViolationError)) throw error;
        if (error.is("user_access", ["server_inbound_id", "credential"])) {
          throw new CredentialTakenError(error.message);
        }
        throw accessExists(row.user_id);
      });
  }

  /**
   * A grant's new secret (revoke-subscription), pending until pushed, at the next revision (a push of
   * the old secret that ends later records nothing); CredentialTakenError when the inbound has it.
   */
  async setCredential(id: string, credential: string): Promise<void> {
    await this.db
      .updateTable("user_access")
      .set({
        credential,
        updated_at: new Date().toISOString(),
        sync_state: "pending",
        sync_error: null,
        sync_revision: sql`sync_revision + 1`,
      })
      .where("id", "=", id)
      .execute()
      .catch((error: unknown) => {
        if (
          error instanceof UniqueViolationError &&
          error.is("user_access", ["server_inbound_id", "credential"])
        ) {
          throw new CredentialTakenError(error.message);
        }
        throw error;
      });
  }

  /**
   * Deletes a revoked grant; the traffic it carried moves to the user's next grant on that server,
   * so the user's totals survive. DELETE … RETURNING reads the bytes as of the delete, after any
   * concurrent traffic write, so nothing counted is lost.
   */
  async deleteKeepingTraffic(grant: Pick<AccessRow, "id" | "user_id" | "server_id">): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const gone = await trx
        .deleteFrom("user_access")
        .where("id", "=", grant.id)
        .returning(["uplink_bytes", "downlink_bytes"])
        .executeTakeFirst();
      const [up, down] = [read.bigint(gone?.uplink_bytes ?? 0), read.bigint(gone?.downlink_bytes ?? 0)];
      if (up + down === 0) return;
      await carryToHeir(trx, { user_id: grant.user_id, server_id: grant.server_id, up, down });
    });
  }

  async deleteAccess(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom("user_access").where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Every grant on the server's inbounds: the desired state of a full reconcile. */
  async listByServer(serverId: string): Promise<SyncGrant[]> {
    return this.#byServerInPages(serverId, []);
  }

  /** The server's grants that have not reached its core: pending, and error too when asked. */
  async listUnsyncedByServer(serverId: string, withErrors: boolean): Promise<SyncGrant[]> {
    return this.#byServerInPages(serverId, withErrors ? ["pending", "error"] : ["pending"]);
  }

  /**
   * The server's grants (only those in `states` when given) in their stable order, read a page at a
   * time by keyset (index user_access_server_order) with the event loop let in between: a server of
   * 30,000 grants is not one statement holding the process for half a second.
   *
   * Rows as sync needs them and no more (a reconcile holds 60,000 of them per server, four servers at
   * once): the sync columns only, and one string each for the server, its inbounds and the states,
   * where the driver would give every row copies of its own (docs/benchmarks/fleet.md, Memory).
   */
  async #byServerInPages(serverId: string, states: readonly SyncState[]): Promise<SyncGrant[]> {
    const isPostgres = dialectOf(this.db) === "postgres";
    const out: SyncGrant[] = [];
    const shared = new SharedStrings();
    let after: { at: string; id: string } | undefined;
    for (;;) {
      let query = this.db
        .selectFrom("user_access as a")
        .innerJoin("users as u", "u.id", "a.user_id")
        .select(SYNC_COLUMNS)
        .select(
          sql<boolean | number>`${sql.raw(admittedSql("u.status"))} and u.fair_use_blocked_until is null`.as(
            "is_user_admitted",
          ),
        )
        // The cursor's time exactly as stored (PostgreSQL's microseconds do not survive a Date).
        .select(
          sql<string>`${sql.raw(isPostgres ? "cast(a.created_at as text)" : "a.created_at")}`.as("order_at"),
        )
        .where("a.server_id", "=", serverId);
      if (states.length > 0) query = query.where("a.sync_state", "in", [...states]);
      if (after !== undefined) {
        const at = isPostgres ? sql`cast(${after.at} as timestamptz)` : sql`${after.at}`;
        query = query.where(sql<boolean>`(a.created_at, a.id) > (${at}, ${after.id})`);
      }
      const { grantsPerPage, betweenPages } = this.paging;
      const rows = await query.orderBy("a.created_at").orderBy("a.id").limit(grantsPerPage).execute();
      for (const row of rows) out.push(toSyncRow(row, serverId, shared));
      const last = rows.at(-1);
      if (last === undefined || rows.length < grantsPerPage) return out;
      after = { at: last.order_at, id: last.id };
      await betweenPages();
    }
  }

  async findByIds(ids: readonly string[]): Promise<AccessRow[]> {
    const out: AccessRow[] = [];
    for (const part of chunks(ids, IDS_PER_STATEMENT)) {
      const rows = await this.db.selectFrom("user_access").selectAll().where("id", "in", part).execute();
      out.push(...rows.map(toRow));
    }
    return out;
  }

  async listActiveIds(inboundId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom("user_access")
      .select("id")
      .where("server_inbound_id", "=", inboundId)
      .where("is_active", "=", true)
      .execute();
    return rows.map((row) => row.id);
  }

  /** Which of these users already have a grant on the inbound. */
  async listGrantedUserIds(inboundId: string, userIds: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (const part of chunks(userIds, IDS_PER_STATEMENT)) {
      const rows = await this.db
        .selectFrom("user_access")
        .select("user_id")
        .where("server_inbound_id", "=", inboundId)
        .where("user_id", "in", part)
        .execute();
      for (const row of rows) out.add(row.user_id);
    }
    return out;
  }

  async listCredentials(inboundId: string): Promise<Set<string>> {
    const rows = await this.db
      .selectFrom("user_access")
      .select("credential")
      .where("server_inbound_id", "=", inboundId)
      .execute();
    return new Set(rows.map((row) => row.credential));
  }

  /** Many grants in one transaction, 1,000 rows per statement: all of them are stored, or none. */
  async insertMany(rows: readonly AccessRow[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const part of chunks(rows, ROWS_PER_INSERT)) {
        await trx
          .insertInto("user_access")
          .values([...part])
          .execute();
      }
    });
  }

  /**
   * Only rows still at the revision the outcome was worked out from (one statement per revision:
   * nearly every grant is at 0 or a few); rows already in that state are not written again (a
   * re-apply of 10,000 synced grants writes nothing).
   */
  async setSyncState(
    grants: readonly GrantRevision[],
    state: SyncState,
    error: string | null,
  ): Promise<void> {
    const byRevision = new Map<number, string[]>();
    for (const { id, sync_revision } of grants) {
      const ids = byRevision.get(sync_revision) ?? [];
      ids.push(id);
      byRevision.set(sync_revision, ids);
    }
    for (const [revision, ids] of byRevision) {
      for (const part of chunks(ids, IDS_PER_STATEMENT)) {
        await this.db
          .updateTable("user_access")
          .set({ sync_state: state, sync_error: error })
          .where("id", "in", part)
          .where("sync_revision", "=", revision)
          .where((eb) => eb.or([eb("sync_state", "!=", state), eb("sync_error", "is distinct from", error)]))
          .execute();
      }
    }
  }

  /** Marks grants on the inbound as given directly (a grant held only through a group becomes own). */
  async markOwn(inboundId: string, userIds: readonly string[]): Promise<void> {
    for (const part of chunks(userIds, IDS_PER_STATEMENT)) {
      await this.db
        .updateTable("user_access")
        .set({ is_own: true })
        .where("server_inbound_id", "=", inboundId)
        .where("user_id", "in", part)
        .where("is_own", "=", false)
        .execute();
    }
  }

  /** The grant stays, held by the user's groups only. */
  async clearOwn(id: string): Promise<void> {
    await this.db.updateTable("user_access").set({ is_own: false }).where("id", "=", id).execute();
  }

  /**
   * The users a group gives this inbound: members of any group holding it; only among `userIds`
   * when given (a membership change), every member otherwise (an inbound added to or removed from a group).
   */
  async listGroupCoveredUserIds(inboundId: string, userIds?: readonly string[]): Promise<Set<string>> {
    const query = this.db
      .selectFrom("user_groups as ug")
      .innerJoin("group_inbounds as gi", "gi.group_id", "ug.group_id")
      .select("ug.user_id")
      .distinct()
      .where("gi.server_inbound_id", "=", inboundId);
    if (userIds === undefined) return new Set((await query.execute()).map((row) => row.user_id));
    const out = new Set<string>();
    for (const part of chunks(userIds, IDS_PER_STATEMENT)) {
      for (const row of await query.where("ug.user_id", "in", part).execute()) out.add(row.user_id);
    }
    return out;
  }

  /** The inbound's grants, of these users only when given. */
  async listOnInbound(inboundId: string, userIds?: readonly string[]): Promise<AccessRow[]> {
    const query = this.db.selectFrom("user_access").selectAll().where("server_inbound_id", "=", inboundId);
    if (userIds === undefined) return (await query.execute()).map(toRow);
    const out: AccessRow[] = [];
    for (const part of chunks(userIds, IDS_PER_STATEMENT)) {
      out.push(...(await query.where("user_id", "in", part).execute()).map(toRow));
    }
    return out;
  }

  /**
   * Deletes many revoked grants in one transaction; like deleteKeepingTraffic, the traffic a deleted
   * grant carried moves to the user's oldest remaining grant on that server.
   */
  async deleteManyKeepingTraffic(ids: readonly string[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const carried: { user_id: string; server_id: string; up: number; down: number }[] = [];
      for (const part of chunks(ids, IDS_PER_STATEMENT)) {
        const gone = await trx
          .deleteFrom("user_access")
          .where("id", "in", part)
          .returning(["user_id", "server_id", "uplink_bytes", "downlink_bytes"])
          .execute();
        for (const row of gone) {
          const [up, down] = [read.bigint(row.uplink_bytes), read.bigint(row.downlink_bytes)];
          if (up + down > 0) carried.push({ user_id: row.user_id, server_id: row.server_id, up, down });
        }
      }
      for (const traffic of carried) await carryToHeir(trx, traffic);
    });
  }

  async listLinksOfUser(userId: string): Promise<AccessLinkRow[]> {
    const rows = await this.#withLinks().where("a.user_id", "=", userId).execute();
    return this.#withHosts(rows.map(toLinkRow));
  }

  async listLinksOfInbound(inboundId: string): Promise<AccessLinkRow[]> {
    const rows = await this.#withLinks().where("a.server_inbound_id", "=", inboundId).execute();
    return this.#withHosts(rows.map(toLinkRow));
  }

  async findLink(userId: string, inboundId: string): Promise<AccessLinkRow | undefined> {
    const row = await this.#withLinks()
      .where("a.user_id", "=", userId)
      .where("a.server_inbound_id", "=", inboundId)
      .executeTakeFirst();
    return row && (await this.#withHosts([toLinkRow(row)]))[0];
  }

  /**
   * Each row's link parameters with its inbound's hosts attached, as subscriptions read them
   * (subscriptions.repository.ts listInbounds): the enabled ones in position order, the server's
   * name and health. An inbound without hosts keeps its parameters (the one implicit host).
   */
  async #withHosts(rows: AccessLinkRow[]): Promise<AccessLinkRow[]> {
    const ids = [...new Set(rows.map((row) => row.server_inbound_id))];
    if (ids.length === 0) return rows;
    const hostsOf = new Map<string, HostRow[]>();
    for (const part of chunks(ids, IDS_PER_STATEMENT)) {
      const hostRows = await this.db
        .selectFrom("inbound_hosts")
        .selectAll()
        .where("server_inbound_id", "in", part)
        .orderBy("server_inbound_id")
        .orderBy("position")
        .orderBy("id")
        .execute();
      for (const host of hostRows) {
        const list = hostsOf.get(host.server_inbound_id) ?? [];
        list.push(host);
        hostsOf.set(host.server_inbound_id, list);
      }
    }
    for (const row of rows) {
      const hosts = hostsOf.get(row.server_inbound_id);
      if (hosts === undefined) continue;
      row.link_params.hosts = {
        serverName: row.server_name,
        serverHealthy: row.server_status !== "offline" && row.server_status !== "error",
        hosts: hosts.filter((host) => !read.bool(host.is_disabled)).map(hostSpecOf),
      };
    }
    return rows;
  }

  #withLinks() {
    return this.db
      .selectFrom("user_access as a")
      .innerJoin("server_inbounds as i", "i.id", "a.server_inbound_id")
      .innerJoin("servers as s", "s.id", "a.server_id")
      .innerJoin("users as u", "u.id", "a.user_id")
      .selectAll("a")
      .select([
        "u.name as user_name",
        "u.status as user_status",
        "u.data_limit_bytes as user_data_limit_bytes",
        "u.used_bytes as user_used_bytes",
        "u.expire_at as user_expire_at",
        "i.tag as inbound_tag",
        "i.is_active as inbound_is_active",
        "i.link_params",
        "s.name as server_name",
        "s.status as server_status",
      ])
      .orderBy("a.created_at")
      .orderBy("a.id");
  }
}

/**
 * Statuses whose users hold credentials on cores: the one list of domain/users.ts; unless the
 * fair-use job blocks them (users.fair_use_blocked_until, docs/FAIR-USE.md).
 */
const ADMITTED = ADMITTED_STATUSES;

export function accessExists(userId: string): ConflictError {
  return new ConflictError(`user ${userId} already has access to this inbound`, "access_exists");
}

function toRow(row: Selectable<UserAccessTable> & { is_user_admitted?: boolean | number }): AccessRow {
  // Two literal shapes, not a spread: a conditional spread builds every row of a 30,000-grant read
  // through V8's slow generic copy (6 % of the CPU of a bench:fleet run at 100,000 × 10).
  const out = toPlainRow(row);
  if (row.is_user_admitted !== undefined) out.is_user_admitted = read.bool(row.is_user_admitted);
  return out;
}

function toPlainRow(row: Selectable<UserAccessTable>): AccessRow {
  return {
    id: row.id,
    user_id: row.user_id,
    server_inbound_id: row.server_inbound_id,
    server_id: row.server_id,
    proxy_user_id: row.proxy_user_id,
    credential: row.credential,
    level: row.level,
    is_active: read.bool(row.is_active),
    sync_state: row.sync_state,
    sync_error: row.sync_error,
    sync_revision: Number(row.sync_revision),
    is_own: read.bool(row.is_own),
    uplink_bytes: read.bigint(row.uplink_bytes),
    downlink_bytes: read.bigint(row.downlink_bytes),
    created_at: read.timestamp(row.created_at),
    updated_at: read.timestamp(row.updated_at),
  };
}

/** What a grant row holds for sync (SyncGrant), as columns of user_access aliased `a`. */
const SYNC_COLUMNS = [
  "a.id",
  "a.user_id",
  "a.server_inbound_id",
  "a.proxy_user_id",
  "a.credential",
  "a.level",
  "a.is_active",
  "a.sync_state",
  "a.sync_error",
  "a.sync_revision",
] as const;

type SyncColumns = Pick<
  Selectable<UserAccessTable>,
  | "id"
  | "user_id"
  | "server_inbound_id"
  | "proxy_user_id"
  | "credential"
  | "level"
  | "is_active"
  | "sync_state"
  | "sync_error"
  | "sync_revision"
> & { is_user_admitted: boolean | number };

/** One string per distinct value within a read: a server's 60,000 rows name three inbounds and a few states. */
class SharedStrings {
  readonly #seen = new Map<string, string>();

  of<T extends string>(value: T): T {
    const known = this.#seen.get(value);
    if (known !== undefined) return known as T;
    this.#seen.set(value, value);
    return value;
  }
}

function toSyncRow(row: SyncColumns, serverId: string, shared: SharedStrings): SyncGrant {
  return {
    id: row.id,
    user_id: row.user_id,
    server_inbound_id: shared.of(row.server_inbound_id),
    server_id: serverId,
    proxy_user_id: row.proxy_user_id,
    credential: row.credential,
    level: row.level,
    is_active: read.bool(row.is_active),
    sync_state: shared.of(row.sync_state),
    sync_error: row.sync_error,
    sync_revision: Number(row.sync_revision),
    is_user_admitted: read.bool(row.is_user_admitted),
  };
}

type LinkColumns = {
  inbound_tag: string;
  inbound_is_active: boolean | number;
  link_params: string;
  server_name: string;
  server_status: string;
  user_name: string;
  user_status: string;
  user_data_limit_bytes: number | string | null;
  user_used_bytes: number | string;
  user_expire_at: string | Date | null;
};

function toLinkRow(row: Selectable<UserAccessTable> & LinkColumns): AccessLinkRow {
  return {
    ...toRow(row),
    inbound_tag: row.inbound_tag,
    inbound_is_active: read.bool(row.inbound_is_active),
    link_params: JSON.parse(row.link_params) as LinkParams,
    server_name: row.server_name,
    server_status: row.server_status,
    user: {
      name: row.user_name,
      status: row.user_status,
      dataLimitBytes: read.optionalBigint(row.user_data_limit_bytes),
      usedBytes: read.bigint(row.user_used_bytes),
      expireAt: read.optionalTimestamp(row.user_expire_at),
    },
  };
}

/** Adds a deleted grant's bytes to the user's oldest remaining grant on that server, if any. */
async function carryToHeir(
  trx: Kysely<Database>,
  traffic: { user_id: string; server_id: string; up: number; down: number },
): Promise<void> {
  const heir = await trx
    .selectFrom("user_access")
    .select("id")
    .where("user_id", "=", traffic.user_id)
    .where("server_id", "=", traffic.server_id)
    .orderBy("created_at")
    .orderBy("id")
    .executeTakeFirst();
  if (heir === undefined) return;
  await trx
    .updateTable("user_access")
    .set({
      uplink_bytes: sql<number>`uplink_bytes + cast(${traffic.up} as bigint)`,
      downlink_bytes: sql<number>`downlink_bytes + cast(${traffic.down} as bigint)`,
    })
    .where("id", "=", heir.id)
    .execute();
}
