// User use cases. Names are trimmed here; deleting a user first takes its grants off every core
// (through the provisioning feature's revoker), then deletes the user and, by cascade, its grants.
import { randomUUID } from "node:crypto";
import { NotFoundError, ValidationError } from "../../lib/errors.ts";
import { trimName } from "../../lib/names.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
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

export class UsersService {
  constructor(
    private readonly users: UsersRepository,
    private readonly revoker: UserAccessRevoker = { revokeUser: async () => {} },
    private readonly now: () => Date = () => new Date(),
    /** user.created / updated / deleted for webhooks (deps.ts wires the notifier). */
    private readonly notify: NotifyUser = async () => {},
  ) {}

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
    return { items, total, page, per_page: perPage, next_cursor: next };
  }

  search(q: string): Promise<User[]> {
    return this.users.searchUsers(q.trim() || q, SEARCH_LIMIT);
  }

  get(id: string): Promise<User> {
    return this.users.getUser(id);
  }

  existingIds(ids: readonly string[]): Promise<Set<string>> {
    return this.users.listExistingIds(ids);
  }

  async create(input: UserCreate): Promise<User> {
    const now = this.now().toISOString();
    const user: User = {
      id: randomUUID(),
      name: trimName(input.name),
      comment: input.comment ?? null,
      telegram_id: input.telegram_id ?? null,
      created_at: now,
      updated_at: now,
    };
    await this.users.insertUser(user);
    await this.notify("user.created", { user });
    return user;
  }

  async update(id: string, input: UserUpdate): Promise<User> {
    const patch: UserPatch = {};
    if (input.name !== undefined) patch.name = trimName(input.name);
    if (input.comment !== undefined) patch.comment = input.comment;
    if (input.telegram_id !== undefined) patch.telegram_id = input.telegram_id;
    const updated = await this.users.updateUser(id, patch, this.now().toISOString());
    if (updated === undefined) throw new NotFoundError("user", id);
    await this.notify("user.updated", { user: updated, changed: Object.keys(patch) });
    return updated;
  }

  async delete(id: string): Promise<void> {
    const user = await this.users.getUser(id);
    await this.revoker.revokeUser(id);
    if (!(await this.users.deleteUser(id))) throw new NotFoundError("user", id);
    await this.notify("user.deleted", { user });
  }
}
