// Webhooks, admins' Telegram settings, and the outbox in SQL. An event and its deliveries are
// written in one transaction; deliveries are claimed with a lock time (and SKIP LOCKED on
// PostgreSQL) so several instances never send one twice at once.
import { type Kysely, type Selectable, sql } from "kysely";
import { type DialectName, read } from "../../db/dialect.ts";
import type {
  AdminTelegramTable,
  Database,
  NotificationDeliveriesTable,
  WebhooksTable,
} from "../../db/types.ts";
import { NotFoundError } from "../../lib/errors.ts";

export type WebhookRow = {
  id: string;
  name: string;
  url: string;
  secretSealed: string;
  events: string[];
  isActive: boolean;
  createdAt: string;
  updatedAt: string;
};

export type TelegramRow = {
  adminId: string;
  botTokenSealed: string;
  chatIds: string[];
  language: string;
  events: string[];
  updatedAt: string;
};

export type DeliveryRow = {
  id: string;
  eventId: string;
  targetKind: "webhook" | "telegram";
  targetId: string;
  status: "pending" | "delivered" | "dead";
  attempts: number;
  nextAttemptAt: string;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  createdAt: string;
};

export type ClaimedDelivery = DeliveryRow & { eventType: string; payload: string };

export class NotificationsRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async listWebhooks(): Promise<WebhookRow[]> {
    const rows = await this.db.selectFrom("webhooks").selectAll().orderBy("name").execute();
    return rows.map(toWebhook);
  }

  async getWebhook(id: string): Promise<WebhookRow> {
    const row = await this.db.selectFrom("webhooks").selectAll().where("id", "=", id).executeTakeFirst();
    if (row === undefined) throw new NotFoundError("webhook", id);
    return toWebhook(row);
  }

  async insertWebhook(row: WebhookRow): Promise<void> {
    await this.db
      .insertInto("webhooks")
      .values({
        id: row.id,
        name: row.name,
        url: row.url,
        secret_sealed: row.secretSealed,
        events: JSON.stringify(row.events),
        is_active: row.isActive,
        created_at: row.createdAt,
        updated_at: row.updatedAt,
      })
      .execute();
  }

  async updateWebhook(row: WebhookRow): Promise<void> {
    await this.db
      .updateTable("webhooks")
      .set({
        name: row.name,
        url: row.url,
        secret_sealed: row.secretSealed,
        events: JSON.stringify(row.events),
        is_active: row.isActive,
        updated_at: row.updatedAt,
      })
      .where("id", "=", row.id)
      .execute();
  }

  /** The webhook and whatever of it was still waiting to be sent. */
  async deleteWebhook(id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx
        .deleteFrom("notification_deliveries")
        .where("target_id", "=", id)
        .where("status", "=", "pending")
        .execute();
      const result = await trx.deleteFrom("webhooks").where("id", "=", id).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    });
  }

  async findTelegram(adminId: string): Promise<TelegramRow | undefined> {
    const row = await this.db
      .selectFrom("admin_telegram")
      .selectAll()
      .where("admin_id", "=", adminId)
      .executeTakeFirst();
    return row && toTelegram(row);
  }

  async saveTelegram(row: TelegramRow): Promise<void> {
    const values = {
      bot_token_sealed: row.botTokenSealed,
      chat_ids: JSON.stringify(row.chatIds),
      language: row.language,
      events: JSON.stringify(row.events),
      updated_at: row.updatedAt,
    };
    await this.db
      .insertInto("admin_telegram")
      .values({ admin_id: row.adminId, ...values })
      .onConflict((oc) => oc.column("admin_id").doUpdateSet(values))
      .execute();
  }

  async deleteTelegram(adminId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .deleteFrom("notification_deliveries")
        .where("target_id", "=", adminId)
        .where("target_kind", "=", "telegram")
        .where("status", "=", "pending")
        .execute();
      await trx.deleteFrom("admin_telegram").where("admin_id", "=", adminId).execute();
    });
  }

  /** Who is listening right now: active webhooks, and the Telegram settings of admins not disabled. */
  async targets(): Promise<{ webhooks: WebhookRow[]; telegram: TelegramRow[] }> {
    const webhooks = await this.db.selectFrom("webhooks").selectAll().where("is_active", "=", true).execute();
    const telegram = await this.db
      .selectFrom("admin_telegram as t")
      .innerJoin("admins as a", "a.id", "t.admin_id")
      .selectAll("t")
      .where("a.is_disabled", "=", false)
      .execute();
    return { webhooks: webhooks.map(toWebhook), telegram: telegram.map(toTelegram) };
  }

  /** The event and one pending delivery per target, all or nothing. */
  async insertEvent(
    event: { id: string; type: string; payload: string; createdAt: string },
    deliveries: { id: string; targetKind: "webhook" | "telegram"; targetId: string }[],
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto("notification_events")
        .values({ id: event.id, type: event.type, payload: event.payload, created_at: event.createdAt })
        .execute();
      if (deliveries.length === 0) return;
      await trx
        .insertInto("notification_deliveries")
        .values(
          deliveries.map((d) => ({
            id: d.id,
            event_id: event.id,
            target_kind: d.targetKind,
            target_id: d.targetId,
            status: "pending" as const,
            attempts: 0,
            next_attempt_at: event.createdAt,
            locked_until: null,
            last_status: null,
            last_error: null,
            delivered_at: null,
            created_at: event.createdAt,
          })),
        )
        .execute();
    });
  }

  /**
   * Takes up to `limit` due deliveries for this instance until `lockUntil`: pending, due, and not
   * locked by another instance. One statement; PostgreSQL skips rows another claim is taking.
   */
  async claimDue(now: string, lockUntil: string, limit: number): Promise<ClaimedDelivery[]> {
    const due = this.db
      .selectFrom("notification_deliveries")
      .select("id")
      .where("status", "=", "pending")
      .where("next_attempt_at", "<=", now)
      .where((eb) => eb.or([eb("locked_until", "is", null), eb("locked_until", "<", now)]))
      .orderBy("next_attempt_at")
      .limit(limit);
    const claimed = await this.db
      .updateTable("notification_deliveries")
      .set({ locked_until: lockUntil })
      .where("id", "in", this.dialect === "postgres" ? due.forUpdate().skipLocked() : due)
      .returning(["id"])
      .execute();
    if (claimed.length === 0) return [];
    const rows = await this.db
      .selectFrom("notification_deliveries as d")
      .innerJoin("notification_events as e", "e.id", "d.event_id")
      .selectAll("d")
      .select(["e.type as event_type", "e.payload"])
      .where(
        "d.id",
        "in",
        claimed.map((c) => c.id),
      )
      .orderBy("d.next_attempt_at")
      .orderBy("d.created_at")
      .execute();
    return rows.map((row) => ({ ...toDelivery(row), eventType: row.event_type, payload: row.payload }));
  }

  async recordAttempt(
    id: string,
    outcome: {
      status: "pending" | "delivered" | "dead";
      attempts: number;
      nextAttemptAt: string;
      lastStatus: number | null;
      lastError: string | null;
      deliveredAt: string | null;
    },
  ): Promise<void> {
    await this.db
      .updateTable("notification_deliveries")
      .set({
        status: outcome.status,
        attempts: outcome.attempts,
        next_attempt_at: outcome.nextAttemptAt,
        locked_until: null,
        last_status: outcome.lastStatus,
        last_error: outcome.lastError,
        delivered_at: outcome.deliveredAt,
      })
      .where("id", "=", id)
      .execute();
  }

  async listDeliveries(targetId: string, page: number, perPage: number) {
    const base = this.db.selectFrom("notification_deliveries as d").where("d.target_id", "=", targetId);
    const rows = await base
      .innerJoin("notification_events as e", "e.id", "d.event_id")
      .selectAll("d")
      .select(["e.type as event_type"])
      .orderBy("d.created_at", "desc")
      .orderBy("d.id", "desc")
      .limit(perPage)
      .offset((page - 1) * perPage)
      .execute();
    const count = await base.select((eb) => eb.fn.countAll().as("n")).executeTakeFirst();
    return {
      items: rows.map((row) => ({ ...toDelivery(row), eventType: row.event_type })),
      total: Number(count?.n ?? 0),
    };
  }

  /** Finished deliveries and their events, older than `before`. */
  async prune(before: string): Promise<number> {
    const result = await this.db
      .deleteFrom("notification_deliveries")
      .where("status", "in", ["delivered", "dead"])
      .where("created_at", "<", before)
      .executeTakeFirst();
    await this.db
      .deleteFrom("notification_events")
      .where("created_at", "<", before)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom("notification_deliveries as d")
              .select(sql<number>`1`.as("one"))
              .whereRef("d.event_id", "=", "notification_events.id"),
          ),
        ),
      )
      .execute();
    return Number(result.numDeletedRows);
  }
}

function toWebhook(row: Selectable<WebhooksTable>): WebhookRow {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    secretSealed: row.secret_sealed,
    events: JSON.parse(row.events) as string[],
    isActive: read.bool(row.is_active),
    createdAt: read.timestamp(row.created_at),
    updatedAt: read.timestamp(row.updated_at),
  };
}

function toTelegram(row: Selectable<AdminTelegramTable>): TelegramRow {
  return {
    adminId: row.admin_id,
    botTokenSealed: row.bot_token_sealed,
    chatIds: JSON.parse(row.chat_ids) as string[],
    language: row.language,
    events: JSON.parse(row.events) as string[],
    updatedAt: read.timestamp(row.updated_at),
  };
}

function toDelivery(row: Selectable<NotificationDeliveriesTable>): DeliveryRow {
  return {
    id: row.id,
    eventId: row.event_id,
    targetKind: row.target_kind,
    targetId: row.target_id,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: read.timestamp(row.next_attempt_at),
    lastStatus: row.last_status,
    lastError: row.last_error,
    deliveredAt: read.optionalTimestamp(row.delivered_at),
    createdAt: read.timestamp(row.created_at),
  };
}
