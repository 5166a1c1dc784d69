// GET /api/users with filters or another sort than the seed's (issue 12 item 6). Without any, the list
// stays UsersService.list (created_at order, total from the row counter, the seed's cursor) exactly.
// With them: every cursor page and the page numbers within the first 10,000 users are keyset reads
// (one index range per status, merged here); deeper page numbers are OFFSET over one query. `total` is the exact count of the matching users,
// taken when a page is asked for by number and carried on by the cursor.
import { createHash } from "node:crypto";
import type { UserStatus } from "../../domain/users.ts";
import { ValidationError } from "../../lib/errors.ts";
import { decodeListCursor, encodeListCursor } from "./cursor.ts";
import {
  compareUsers,
  type ListFilter,
  type ListSort,
  type UserFiltersRepository,
} from "./user-filters.repository.ts";
import type { ListQuery, User, UserPage } from "./users.schemas.ts";
import { NO_PUBLIC_URL, type PublicUrlSource } from "./users.service.ts";

/** Pages ending within this many rows are read as index ranges from the start, deeper ones by OFFSET. */
const SHALLOW_ROWS = 10_000;

export type ListSpec = { filter: ListFilter; sort: ListSort };

/** Whether the query asks for anything but the seed's list (then UserListService answers it). */
export function isFilteredList(query: ListQuery): boolean {
  return (
    query.status !== undefined ||
    query.expires_before !== undefined ||
    query.used_over_percent !== undefined ||
    query.owner_admin_id !== undefined ||
    (query.sort !== undefined && query.sort !== "created_at") ||
    query.order === "desc"
  );
}

/** A filter as the repository takes it: statuses sorted without duplicates, the moment in UTC. */
export function listFilterOf(filter: {
  status?: readonly UserStatus[] | string | undefined;
  expires_before?: string | undefined;
  used_over_percent?: number | undefined;
  owner_admin_id?: string | undefined;
}): ListFilter {
  const out: ListFilter = {};
  if (filter.status !== undefined) {
    const list =
      typeof filter.status === "string" ? (filter.status.split(",") as UserStatus[]) : filter.status;
    out.statuses = [...new Set(list)].sort();
  }
  if (filter.expires_before !== undefined) out.expiresBefore = new Date(filter.expires_before).toISOString();
  if (filter.used_over_percent !== undefined) out.usedOverPercent = filter.used_over_percent;
  if (filter.owner_admin_id !== undefined) {
    out.ownerAdminId = filter.owner_admin_id === "none" ? null : filter.owner_admin_id.toLowerCase();
  }
  return out;
}

export function specOf(query: ListQuery): ListSpec {
  return {
    filter: listFilterOf(query),
    sort: { key: query.sort ?? "created_at", order: query.order ?? "asc" },
  };
}

/** What a cursor is bound to: a digest of the filter and the sort. */
export function specKey(spec: ListSpec): string {
  const { filter, sort } = spec;
  const canonical = JSON.stringify([
    sort.key,
    sort.order,
    filter.statuses ?? null,
    filter.expiresBefore ?? null,
    filter.usedOverPercent ?? null,
    filter.ownerAdminId === undefined ? "any" : filter.ownerAdminId,
  ]);
  return createHash("sha256").update(canonical).digest("base64url").slice(0, 16);
}

export class UserListService {
  constructor(
    private readonly repo: UserFiltersRepository,
    /** The public base URL subscription URLs start with (the subscriptions service holds it). */
    private readonly links: PublicUrlSource = NO_PUBLIC_URL,
    private readonly shallowRows: number = SHALLOW_ROWS,
  ) {}

  async list(query: ListQuery): Promise<UserPage> {
    if (query.cursor !== undefined && query.page !== undefined) {
      throw new ValidationError("give page or cursor, not both", [
        { path: "querystring.cursor", message: "must not be given with page" },
      ]);
    }
    const spec = specOf(query);
    const key = specKey(spec);
    const perPage = query.per_page;
    let items: User[];
    let page: number;
    let total: number;
    let hasMore: boolean;
    if (query.cursor !== undefined) {
      const after = decodeListCursor(query.cursor, key, spec.sort.key);
      const rows = await this.#keyset(spec, { value: after.value, id: after.id }, perPage + 1);
      ({ page, total } = after);
      items = rows.slice(0, perPage);
      hasMore = rows.length > perPage;
    } else {
      page = query.page ?? 1;
      const offset = (page - 1) * perPage;
      // Shallow pages through the same ranges as the cursor (each range read up to this page's end,
      // merged, skipped); deeper ones by OFFSET over one query.
      const rows =
        offset + perPage <= this.shallowRows
          ? (await this.#keyset(spec, undefined, offset + perPage + 1)).slice(offset)
          : await this.repo.offsetPage(spec.filter, spec.sort, offset, perPage + 1);
      items = rows.slice(0, perPage);
      hasMore = rows.length > perPage;
      total = await this.repo.count(spec.filter);
    }
    const last = items.at(-1);
    const next =
      hasMore && last !== undefined
        ? encodeListCursor({ value: last[spec.sort.key], id: last.id, page: page + 1, total, key })
        : null;
    const base = this.links.publicUrl();
    return {
      items:
        base === "" ? items : items.map((u) => ({ ...u, subscription_url: `${base}${u.subscription_url}` })),
      total,
      page,
      per_page: perPage,
      next_cursor: next,
    };
  }

  /** One index range per status, merged in the sort's order (one range when no status is given). */
  async #keyset(
    spec: ListSpec,
    after: { value: string | number | null; id: string } | undefined,
    limit: number,
  ): Promise<User[]> {
    const statuses = spec.filter.statuses;
    if (statuses === undefined || statuses.length === 1) {
      return this.repo.range(spec.filter, statuses?.[0], spec.sort, after, limit);
    }
    const all: User[] = [];
    // One after the other: concurrent queries on two pg connections stall (users.repository.ts).
    for (const status of statuses)
      all.push(...(await this.repo.range(spec.filter, status, spec.sort, after, limit)));
    return all.sort(compareUsers(spec.sort)).slice(0, limit);
  }
}
