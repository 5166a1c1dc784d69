// Groups in SQL: the group, its inbounds (group_inbounds) and its members (user_groups). Grants are
// the access feature's: this file never touches user_access.
import { randomUUID } from "node:crypto";
import type { Kysely, Selectable } from "kysely";
import { IDS_PER_STATEMENT, read } from "../../db/dialect.ts";
import type { Database, GroupsTable } from "../../db/types.ts";
import { UniqueViolationError } from "../../db/unique-violation.ts";
import type { UserStatus } from "../../domain/users.ts";
import { ConflictError, NotFoundError } from "../../lib/errors.ts";
import { chunks } from "../../lib/limiter.ts";
import type { Group } from "./groups.schemas.ts";

export class GroupsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** `ownerId`: member_count counts only that admin's users (an own-scoped reader). */
  async list(ownerId?: string): Promise<Group[]> {
    const rows = await this.db.selectFrom("groups").selectAll().orderBy("name").execute();
    return this.#withDetails(rows, ownerId);
  }

  async getGroup(id: string, ownerId?: string): Promise<Group> {
    const row = await this.db.selectFrom("groups").selectAll().where("id", "=", id).executeTakeFirst();
    if (row === undefined) throw new NotFoundError("group", id);
    const [group] = await this.#withDetails([row], ownerId);
    if (group === undefined) throw new NotFoundError("group", id);
    return group;
  }

  async insert(name: string, now: string): Promise<string> {
    const id = randomUUID();
    await this.db
      .insertInto("groups")
      .values({ id, name, created_at: now, updated_at: now })
      .execute()
      .catch((error: unknown) => {
        throw nameTaken(error, name);
      });
    return id;
  }

  async rename(id: string, name: string, now: string): Promise<void> {
    await this.db
      .updateTable("groups")
      .set({ name, updated_at: now })
      .where("id", "=", id)
      .execute()
      .catch((error: unknown) => {
        throw nameTaken(error, name);
      });
  }

  async touch(id: string, now: string): Promise<void> {
    await this.db.updateTable("groups").set({ updated_at: now }).where("id", "=", id).execute();
  }

  /** Deletes the group; its inbound and member rows go with it (cascade). */
  async delete(id: string): Promise<void> {
    await this.db.deleteFrom("groups").where("id", "=", id).execute();
  }

  async listInboundIds(groupId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom("group_inbounds")
      .select("server_inbound_id")
      .where("group_id", "=", groupId)
      .execute();
    return rows.map((row) => row.server_inbound_id);
  }

  /** Adds the inbounds the group does not hold yet; returns those added. */
  async addInbounds(groupId: string, inboundIds: readonly string[]): Promise<string[]> {
    const held = new Set(await this.listInboundIds(groupId));
    const fresh = [...new Set(inboundIds)].filter((id) => !held.has(id));
    if (fresh.length === 0) return [];
    await this.db
      .insertInto("group_inbounds")
      .values(fresh.map((server_inbound_id) => ({ group_id: groupId, server_inbound_id })))
      .onConflict((oc) => oc.doNothing())
      .execute()
      .catch((error: unknown) => {
        throw goneMeanwhile(error);
      });
    return fresh;
  }

  async removeInbounds(groupId: string, inboundIds: readonly string[]): Promise<number> {
    if (inboundIds.length === 0) return 0;
    const result = await this.db
      .deleteFrom("group_inbounds")
      .where("group_id", "=", groupId)
      .where("server_inbound_id", "in", [...inboundIds])
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Adds these users (existing ones: the caller checked) as members; returns how many were new. */
  async addMembers(groupId: string, userIds: readonly string[]): Promise<number> {
    let added = 0;
    for (const part of chunks(userIds, IDS_PER_STATEMENT)) {
      const result = await this.db
        .insertInto("user_groups")
        .values(part.map((user_id) => ({ group_id: groupId, user_id })))
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst()
        .catch((error: unknown) => {
          throw goneMeanwhile(error);
        });
      added += Number(result.numInsertedOrUpdatedRows ?? 0);
    }
    return added;
  }

  async removeMembers(groupId: string, userIds: readonly string[]): Promise<number> {
    let removed = 0;
    for (const part of chunks(userIds, IDS_PER_STATEMENT)) {
      const result = await this.db
        .deleteFrom("user_groups")
        .where("group_id", "=", groupId)
        .where("user_id", "in", part)
        .executeTakeFirst();
      removed += Number(result.numDeletedRows);
    }
    return removed;
  }

  /** `ownerId`: only that admin's users (an own-scoped reader). */
  async listMembers(
    groupId: string,
    after: string | undefined,
    limit: number,
    ownerId?: string,
  ): Promise<{ id: string; name: string; status: UserStatus }[]> {
    let query = this.db
      .selectFrom("user_groups as ug")
      .innerJoin("users as u", "u.id", "ug.user_id")
      .select(["u.id", "u.name", "u.status"])
      .where("ug.group_id", "=", groupId);
    if (after !== undefined) query = query.where("u.id", ">", after);
    if (ownerId !== undefined) query = query.where("u.owner_admin_id", "=", ownerId);
    return query.orderBy("u.id").limit(limit).execute();
  }

  async countMembers(groupId: string, ownerId?: string): Promise<number> {
    let query = this.db
      .selectFrom("user_groups as ug")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("ug.group_id", "=", groupId);
    if (ownerId !== undefined) {
      query = query.innerJoin("users as u", "u.id", "ug.user_id").where("u.owner_admin_id", "=", ownerId);
    }
    const row = await query.executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Every member's id (a group removed or an inbound changed works over all of them). */
  async listMemberIds(groupId: string): Promise<string[]> {
    const rows = await this.db
      .selectFrom("user_groups")
      .select("user_id")
      .where("group_id", "=", groupId)
      .execute();
    return rows.map((row) => row.user_id);
  }

  /** The groups of each of these users (GET /api/users and friends show group_ids). */
  async groupIdsOf(userIds: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(userIds.map((id) => [id, []]));
    for (const part of chunks([...new Set(userIds)], IDS_PER_STATEMENT)) {
      const rows = await this.db
        .selectFrom("user_groups as ug")
        .innerJoin("groups as g", "g.id", "ug.group_id")
        .select(["ug.user_id", "ug.group_id"])
        .where("ug.user_id", "in", part)
        .orderBy("g.name")
        .execute();
      for (const row of rows) out.get(row.user_id)?.push(row.group_id);
    }
    return out;
  }

  /** Which of these ids are groups. */
  async existingIds(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db
      .selectFrom("groups")
      .select("id")
      .where("id", "in", [...ids])
      .execute();
    return new Set(rows.map((row) => row.id));
  }

  async #withDetails(rows: Selectable<GroupsTable>[], ownerId: string | undefined): Promise<Group[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((row) => row.id);
    const inbounds = await this.db
      .selectFrom("group_inbounds as gi")
      .innerJoin("server_inbounds as i", "i.id", "gi.server_inbound_id")
      .select(["gi.group_id", "gi.server_inbound_id"])
      .where("gi.group_id", "in", ids)
      .orderBy("i.created_at")
      .orderBy("i.id")
      .execute();
    let countQuery = this.db
      .selectFrom("user_groups as ug")
      .select((eb) => ["ug.group_id", eb.fn.countAll<number | string>().as("n")])
      .where("ug.group_id", "in", ids)
      .groupBy("ug.group_id");
    if (ownerId !== undefined) {
      countQuery = countQuery
        .innerJoin("users as u", "u.id", "ug.user_id")
        .where("u.owner_admin_id", "=", ownerId);
    }
    const counts = await countQuery.execute();
    const countOf = new Map(counts.map((row) => [row.group_id, Number(row.n)]));
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      inbound_ids: inbounds.filter((i) => i.group_id === row.id).map((i) => i.server_inbound_id),
      member_count: countOf.get(row.id) ?? 0,
      created_at: read.timestamp(row.created_at),
      updated_at: read.timestamp(row.updated_at),
    }));
  }
}

function nameTaken(error: unknown, name: string): unknown {
  if (error instanceof UniqueViolationError && error.is("groups", ["name"])) {
    return new ConflictError(`a group named ${JSON.stringify(name)} exists`, "group_name_taken");
  }
  return error;
}

/**
 * The group, a user or an inbound was deleted between the checks and this write (a race with a
 * delete): a 409 to retry, not a 500. PostgreSQL's foreign_key_violation and SQLite's code for it.
 */
function goneMeanwhile(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== "23503" && code !== "SQLITE_CONSTRAINT_FOREIGNKEY") return error;
  return new ConflictError("the group, a user or an inbound was deleted meanwhile; try again", "conflict");
}
