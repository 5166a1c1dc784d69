// User use cases. Names are trimmed here; deleting a user first takes its grants off every core
// (through the provisioning feature's revoker), then deletes the user and, by cascade, its grants.
import { randomBytes, randomUUID } from "node:crypto";
import { NotFoundError, ValidationError } from "../../lib/errors.ts";
import type { Changes } from "../../lib/events.ts";
import { trimName } from "../../lib/names.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
import type { QuotasRepository, QuotaTx } from "./quotas.repository.ts";
import { statusAfterWrite } from "./status.ts";
import type { UserPatch, UsersRepository } from "./users.repository.ts";
import type { ListQuery, User, UserCreate, UserPage, UserUpdate } from "./users.schemas.ts";

export const SEARCH_LIMIT = 100;

/** Takes every grant of a user off its core (best effort: unreachable cores get queued removals). */
export interface UserAccessRevoker {
  revokeUser(userId: string): Promise<void>;
}

export type NotifyUser = (
  type: "user.created" | "user.updated" | "user.deleted",
  data: Record<string, unknown>,
) => Promise<void>;

/** Where the public base URL of subscription URLs comes from ("" for a path alone). */
export type PublicUrlSource = { publicUrl(): string };
export const NO_PUBLIC_URL: PublicUrlSource = { publicUrl: () => "" };

export class UsersService {
  constructor(
    private readonly users: UsersRepository,
    private readonly revoker: UserAccessRevoker = { revokeUser: async () => {} },
    private readonly now: () => Date = () => new Date(),
    /** user.created / updated / deleted for webhooks (deps.ts wires the notifier). */
    private readonly notify: NotifyUser = async () => {},
    /** The public base URL subscription URLs start with (the subscriptions service holds it). */
    private readonly links: PublicUrlSource = NO_PUBLIC_URL,
    /** userStatusChanged when a write moves a user's status (provisioning follows at once). */
    private readonly changes?: Changes,
    /** Resellers' quotas (docs/RESELLERS.md): creates, data limits and owner moves run within them. */
    private readonly quotas?: QuotasRepository,
    /** The user's groups, read before a delete so user.deleted still carries them. */
    private readonly groups?: { groupIdsOf(userIds: readonly string[]): Promise<Map<string, string[]>> },
  ) {}

  /** Runs a write that may grow the users of these owners within their quotas (none wired: as is). */
  #withinQuotas<T>(ownerIds: readonly (string | null)[], work: (db?: QuotaTx) => Promise<T>): Promise<T> {
    return this.quotas === undefined ? work() : this.quotas.withinQuotas(ownerIds, work);
  }

  /** Who owns the user: an admin's id, null (nobody), undefined when there is no such user. */
  ownerOf(id: string): Promise<string | null | undefined> {
    return this.users.findOwner(id);
  }

  /** Of these ids, the ones `ownerId` owns (every existing one when ownerId is undefined). */
  ownedIds(ids: readonly string[], ownerId: string | undefined): Promise<Set<string>> {
    return ownerId === undefined ? this.users.listExistingIds(ids) : this.users.listOwnedIds(ids, ownerId);
  }

  /** An owner moves a user to another admin (null: nobody), within that admin's quotas. */
  async setOwner(id: string, ownerId: string | null): Promise<User> {
    await this.users.getUser(id);
    if (ownerId !== null && !(await this.users.adminExists(ownerId))) {
      throw new ValidationError("no such admin", [{ path: "body.owner_admin_id", message: "no such admin" }]);
    }
    await this.#withinQuotas([ownerId], (db) =>
      this.users.setOwner([id], ownerId, this.now().toISOString(), db),
    );
    const user = await this.get(id);
    await this.notify("user.updated", { user: this.#event(user), changed: ["owner_admin_id"] });
    return user;
  }

  /** The user as the API shows them: subscription_url absolute when a public URL is set. */
  #shown(user: User): User {
    const base = this.links.publicUrl();
    return base === "" ? user : { ...user, subscription_url: `${base}${user.subscription_url}` };
  }

  /** What webhooks get: the user without their subscription URL (a credential). */
  #event(user: User): Omit<User, "subscription_url"> {
    const { subscription_url: _url, ...rest } = user;
    return rest;
  }

  /** A new sub_token: the old subscription URL is 404 from now on (every instance: the change feed). */
  async rotateSubToken(id: string): Promise<User> {
    if (!(await this.users.setSubToken(id, newSubToken(), this.now().toISOString()))) {
      throw new NotFoundError("user", id);
    }
    return this.get(id);
  }

  /**
   * A page by number (OFFSET: slower the deeper it is) or the page after a cursor (keyset on
   * created_at, id: as fast at any depth). Either way the answer carries the cursor of the next page.
   */
  async list(query: ListQuery): Promise<UserPage> {
    if (query.cursor !== undefined && query.page !== undefined) {
      throw new ValidationError("give page or cursor, not both", [
        { path: "querystring.cursor", message: "must not be given with page" },
      ]);
    }
    const perPage = query.per_page;
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const page = after?.page ?? query.page ?? 1;
    const { items, total, hasMore } =
      after === undefined
        ? await this.users.listUsers(page, perPage)
        : await this.users.listUsersAfter(after, perPage);
    const last = items.at(-1);
    const next = hasMore && last !== undefined ? encodeCursor(last, page + 1) : null;
    return {
      items: items.map((user) => this.#shown(user)),
      total,
      page,
      per_page: perPage,
      next_cursor: next,
    };
  }

  /** `ownerId`: only that admin's users (an own-scoped search). */
  async search(q: string, ownerId?: string): Promise<User[]> {
    const query = q.trim() || q;
    const found =
      ownerId === undefined
        ? await this.users.searchUsers(query, SEARCH_LIMIT)
        : await this.users.searchOwnedUsers(query, SEARCH_LIMIT, ownerId);
    return found.map((user) => this.#shown(user));
  }

  async get(id: string): Promise<User> {
    return this.#shown(await this.users.getUser(id));
  }

  existingIds(ids: readonly string[]): Promise<Set<string>> {
    return this.users.listExistingIds(ids);
  }

  /**
   * `ownerAdminId`: the admin who creates the user and owns them (null: nobody, e.g. the CLI).
   * `groupIds`: the groups the caller joins the user to next (user.created carries them).
   */
  async create(
    input: UserCreate,
    ownerAdminId: string | null = null,
    groupIds: readonly string[] = [],
  ): Promise<User> {
    const [user] = await this.createMany([input], ownerAdminId, groupIds);
    return user as User;
  }

  /**
   * Several users in one transaction within the owner's quotas: a batch that would exceed a quota is
   * refused whole (403 naming it) and none of it is written (POST /api/users/bulk).
   */
  async createMany(
    inputs: readonly UserCreate[],
    ownerAdminId: string | null = null,
    groupIds: readonly string[] = [],
  ): Promise<User[]> {
    const made = inputs.map((input) => this.#newUser(input, ownerAdminId));
    await this.#withinQuotas([ownerAdminId], async (db) => {
      for (const { user, subToken } of made) await this.users.insertUser(user, subToken, db);
    });
    for (const { user } of made) {
      await this.notify("user.created", { user: { ...this.#event(user), group_ids: [...groupIds] } });
    }
    return made.map(({ user }) => this.#shown(user));
  }

  #newUser(input: UserCreate, ownerAdminId: string | null): { user: User; subToken: string } {
    const clock = this.now();
    const now = clock.toISOString();
    const user: User = {
      id: randomUUID(),
      name: trimName(input.name),
      comment: input.comment ?? null,
      announce: input.announce ?? null,
      ip_limit: input.ip_limit ?? null,
      device_limit: input.device_limit ?? null,
      fair_use_blocked_until: null,
      telegram_id: input.telegram_id ?? null,
      created_at: now,
      updated_at: now,
      subscription_url: "",
      status: "active",
      data_limit_bytes: input.data_limit_bytes ?? null,
      data_limit_reset: input.data_limit_reset ?? "no_reset",
      used_bytes: 0,
      lifetime_used_bytes: 0,
      last_reset_at: null,
      expire_at: moment(input.expire_at),
      on_hold_duration_seconds: input.on_hold_duration_seconds ?? null,
      on_hold_timeout_at: moment(input.on_hold_timeout_at),
      online_at: null,
      sub_updated_at: null,
      sub_last_user_agent: null,
      owner_admin_id: ownerAdminId,
      next_plan_id: input.next_plan_id?.toLowerCase() ?? null,
    };
    checkOnHold(input.status, user);
    user.status = statusAfterWrite(input.status, user, clock);
    const subToken = newSubToken();
    user.subscription_url = `/sub/${subToken}`;
    return { user, subToken };
  }

  async update(id: string, input: UserUpdate): Promise<User> {
    const patch: UserPatch = {};
    if (input.name !== undefined) patch.name = trimName(input.name);
    if (input.comment !== undefined) patch.comment = input.comment;
    if (input.announce !== undefined) patch.announce = input.announce;
    if (input.ip_limit !== undefined) patch.ip_limit = input.ip_limit;
    if (input.device_limit !== undefined) patch.device_limit = input.device_limit;
    if (input.telegram_id !== undefined) patch.telegram_id = input.telegram_id;
    if (input.next_plan_id !== undefined) patch.next_plan_id = input.next_plan_id?.toLowerCase() ?? null;
    if (input.data_limit_bytes !== undefined) patch.data_limit_bytes = input.data_limit_bytes;
    if (input.data_limit_reset !== undefined) patch.data_limit_reset = input.data_limit_reset;
    if (input.expire_at !== undefined) patch.expire_at = moment(input.expire_at);
    if (input.on_hold_duration_seconds !== undefined)
      patch.on_hold_duration_seconds = input.on_hold_duration_seconds;
    if (input.on_hold_timeout_at !== undefined) patch.on_hold_timeout_at = moment(input.on_hold_timeout_at);
    const touchesStatus =
      input.status !== undefined ||
      input.data_limit_bytes !== undefined ||
      input.expire_at !== undefined ||
      input.on_hold_duration_seconds !== undefined;
    if (touchesStatus) {
      // Judged against the stored numbers; a write racing the lifecycle job is judged again by its next tick.
      const current = await this.users.getUser(id);
      const next = { ...current, ...patch };
      checkOnHold(input.status, next);
      const status = statusAfterWrite(input.status, next, this.now());
      if (status !== current.status) patch.status = status;
    }
    // A new data limit may grow the owner's granted total: written within their quota.
    const owner = patch.data_limit_bytes === undefined ? undefined : await this.users.findOwner(id);
    const updated = await this.#withinQuotas(owner ? [owner] : [], (db) =>
      this.users.updateUser(id, patch, this.now().toISOString(), db),
    );
    if (updated === undefined) throw new NotFoundError("user", id);
    if (patch.status !== undefined) await this.changes?.emit("userStatusChanged", [id]);
    await this.notify("user.updated", { user: this.#event(updated), changed: Object.keys(patch) });
    return this.#shown(updated);
  }

  async delete(id: string): Promise<void> {
    const user = await this.users.getUser(id);
    const groupIds = (await this.groups?.groupIdsOf([id]))?.get(id);
    await this.revoker.revokeUser(id);
    if (!(await this.users.deleteUser(id))) throw new NotFoundError("user", id);
    const event = groupIds === undefined ? this.#event(user) : { ...this.#event(user), group_ids: groupIds };
    await this.notify("user.deleted", { user: event });
  }
}

/** An API timestamp as the database keeps it: UTC toISOString (SQLite compares them as text). */
function moment(value: string | null | undefined): string | null {
  return value === undefined || value === null ? null : new Date(value).toISOString();
}

/** on_hold needs a duration: it is what expire_at becomes once the clock starts. */
function checkOnHold(
  requested: string | undefined,
  user: { status: string; on_hold_duration_seconds: number | null },
): void {
  const onHold = requested === "on_hold" || (requested === undefined && user.status === "on_hold");
  if (onHold && user.on_hold_duration_seconds === null) {
    throw new ValidationError("an on_hold user needs on_hold_duration_seconds", [
      { path: "body.on_hold_duration_seconds", message: "required when status is on_hold" },
    ]);
  }
}

/** 128 random bits as 32 lowercase hex characters (what migration 0014 draws too). */
export function newSubToken(): string {
  return randomBytes(16).toString("hex");
}
