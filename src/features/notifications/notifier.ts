// Emitting an event: it is written to the outbox with one pending delivery per listening target
// (active webhooks whose filter wants it, admins' Telegram chats that subscribed to it), in one
// transaction; the dispatcher sends them. Emitting never waits for a receiver.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { EventType, NotificationEvent } from "./events.ts";
import { TELEGRAM_EVENT_TYPES, wants } from "./events.ts";
import type { NotificationsRepository } from "./notifications.repository.ts";

function isTelegramEvent(type: EventType): boolean {
  return (TELEGRAM_EVENT_TYPES as readonly string[]).includes(type);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type Emit = (type: EventType, data: Record<string, unknown>) => Promise<void>;

/** The groups of users (the groups feature's memberships, wired in deps.ts). */
export type UserGroupIdsOf = (userIds: readonly string[]) => Promise<Map<string, string[]>>;

export class Notifier {
  /** Event times strictly increase within a process, so their order is the order they happened. */
  #lastMs = 0;

  constructor(
    private readonly repo: NotificationsRepository,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
    /** User events carry the user's group_ids, read when the event is written. */
    private readonly userGroups?: UserGroupIdsOf,
  ) {}

  /** Best effort for the caller: a failure to write the outbox is logged, never thrown at a user request. */
  readonly emit: Emit = async (type, data) => {
    await this.emitMany(type, [data]);
  };

  /** As emit, for many subjects of one event (a function of its own, given to services as it is). */
  readonly emitMany = async (type: EventType, datas: readonly Record<string, unknown>[]): Promise<void> => {
    if (datas.length === 0) return;
    try {
      const { webhooks, telegram } = await this.repo.targets();
      const targets = [
        ...webhooks.filter((w) => wants(w.events, type)).map((w) => ({ kind: "webhook" as const, id: w.id })),
        ...telegram
          .filter((t) => isTelegramEvent(type) && wants(t.events, type))
          .map((t) => ({ kind: "telegram" as const, id: t.adminId })),
      ];
      if (targets.length === 0) return;
      for (const data of await this.#withGroupIds(datas)) {
        const event: NotificationEvent = {
          id: randomUUID(),
          type,
          created_at: this.now().toISOString(),
          data,
        };
        await this.repo.insertEvent(
          { id: event.id, type, payload: JSON.stringify(event), createdAt: event.created_at },
          targets.map((target) => ({ id: randomUUID(), targetKind: target.kind, targetId: target.id })),
        );
      }
    } catch (error) {
      this.logger.error({ err: error, event: type }, "notification not written to the outbox");
    }
  };

  /**
   * User events carry the user's groups: each `data.user` (an object with an id) gets `group_ids`,
   * and so does a `data` naming its user by `user_id` (the fair-use and device events), unless they
   * have them already (a deleted user's, read before the delete took the memberships with it).
   */
  async #withGroupIds(
    datas: readonly Record<string, unknown>[],
  ): Promise<readonly Record<string, unknown>[]> {
    if (this.userGroups === undefined) return datas;
    const ids = datas.flatMap((data) => subjectOf(data)?.id ?? []).filter((id) => UUID.test(id));
    if (ids.length === 0) return datas;
    // The event matters more than its groups: a failed lookup is logged and the event still written.
    const groups = await this.userGroups(ids).catch((error: unknown) => {
      this.logger.warn({ err: error }, "user groups not read for an event");
      return undefined;
    });
    if (groups === undefined) return datas;
    return datas.map((data) => {
      const subject = subjectOf(data);
      if (subject === undefined) return data;
      const groupIds = groups.get(subject.id) ?? [];
      return subject.user === undefined
        ? { ...data, group_ids: groupIds }
        : { ...data, user: { ...subject.user, group_ids: groupIds } };
    });
  }

  #timestamp(): string {
    this.#lastMs = Math.max(this.now().getTime(), this.#lastMs + 1);
    return new Date(this.#lastMs).toISOString();
  }

  /** A test event to one target only (POST /api/webhooks/{id}/test, the Telegram test). */
  async emitTo(targetKind: "webhook" | "telegram", targetId: string, data: Record<string, unknown>) {
    const event: NotificationEvent = {
      id: randomUUID(),
      type: "webhook.test",
      created_at: this.#timestamp(),
      data,
    };
    const delivery = randomUUID();
    await this.repo.insertEvent(
      { id: event.id, type: event.type, payload: JSON.stringify(event), createdAt: event.created_at },
      [{ id: delivery, targetKind, targetId }],
    );
    return { event_id: event.id, delivery_id: delivery };
  }
}

/** The user an event is about and still lacks group_ids: `data.user` or `data.user_id`. */
function subjectOf(
  data: Record<string, unknown>,
): { id: string; user?: Record<string, unknown> } | undefined {
  const user = data.user;
  if (typeof user === "object" && user !== null) {
    const id = (user as { id?: unknown }).id;
    if ("group_ids" in user || typeof id !== "string") return undefined;
    return { id, user: user as Record<string, unknown> };
  }
  if (typeof data.user_id === "string" && !("group_ids" in data)) return { id: data.user_id };
  return undefined;
}
