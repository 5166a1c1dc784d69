// Access grants: who may use which inbound. A grant gets the user's proxy id on that server and a
// fresh credential, is stored, then added to the core through CoreSync; revoking takes it off the
// core first (queued when the core is unreachable). Also the client configurations of grants.
import {
  ConflictError,
  NotFoundError,
  notFoundAt,
  UnprocessableError,
  ValidationError,
} from "../../lib/errors.ts";
import { ownerScope, type Principal } from "../../lib/http.ts";
import { limiter } from "../../lib/limiter.ts";
import { qrSvgDataUri } from "../../lib/qr.ts";
import { type UserValues, userValues } from "../../lib/user-values.ts";
import { isUuid } from "../../lib/uuid.ts";
import type { InboundRow, InboundsRepository } from "../inbounds/inbounds.repository.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { CoreSync } from "../sync/core-sync.ts";
import { drawCredential } from "../sync/credentials.ts";
import type { User, UserCreate } from "../users/users.schemas.ts";
import type { UsersService } from "../users/users.service.ts";
import {
  type AccessLinkRow,
  type AccessRepository,
  type AccessRow,
  accessExists,
  CredentialTakenError,
} from "./access.repository.ts";
import type { AccessRecord, ClientConfig, GrantCreate } from "./access.schemas.ts";
import { newGrantRow } from "./grant-rows.ts";
import { type EntryLink, entryLinksOf } from "./links.ts";

const CREDENTIAL_ATTEMPTS = 5;

export class AccessService {
  constructor(
    private readonly access: AccessRepository,
    private readonly inbounds: InboundsRepository,
    private readonly users: UsersService,
    private readonly servers: ServersService,
    private readonly sync: CoreSync,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** 201 with the record; a core that cannot be reached leaves it stored with sync_state 'pending'. */
  /**
   * `actor`: who grants. A new user (by name) is theirs, within their quotas; with an own
   * access.write scope, another admin's user_id is answered like an unknown one.
   */
  async grant(
    serverId: string,
    inboundId: string,
    input: GrantCreate,
    actor?: Pick<Principal, "adminId" | "ownScope">,
  ): Promise<AccessRecord> {
    await this.servers.get(serverId);
    const owner = actor && ownerScope(actor, "access.write");
    return this.sync.exclusive(inboundId, async () => {
      const inbound = await this.inbounds.getInbound(serverId, inboundId);
      const existing =
        input.user_id === undefined ? undefined : await this.#existingUser(input.user_id, owner);
      const held = existing && (await this.access.findOnInbound(inboundId, { userId: existing.id }));
      if (held?.is_own) throw accessExists(held.user_id);
      if (held !== undefined) {
        // Held through a group only: it becomes the user's own too, and outlives the group.
        await this.access.markOwn(inboundId, [held.user_id]);
        return record({ ...held, is_own: true });
      }
      await this.sync.checkCapacity(inbound, 1, { path: "server_inbound_id", message: "holds its one user" });
      const user = existing ?? (await this.users.create(newUserOf(input), actor?.adminId ?? null));
      const row = await this.#insert(inbound, user.id, input.level ?? 0);
      const status = await this.sync.addGrant(row.id);
      return record({ ...row, sync_state: status.state, sync_error: status.error });
    });
  }

  /** `key` is the grant's proxy_user_id or the user's uuid; `ownerId`: only a grant of that admin's user. */
  async revoke(serverId: string, inboundId: string, key: string, ownerId?: string): Promise<void> {
    await this.servers.get(serverId);
    await this.sync.exclusive(inboundId, async () => {
      const inbound = await this.inbounds.getInbound(serverId, inboundId);
      const by = isUuid(key) ? { userId: key.toLowerCase() } : { proxyUserId: key };
      const grant = await this.access.findOnInbound(inboundId, by);
      if (grant === undefined || !(await this.#owns(ownerId, grant.user_id))) {
        throw new NotFoundError("access grant", key);
      }
      const groups = await this.access.listGroupCoveredUserIds(inboundId, [grant.user_id]);
      if (groups.has(grant.user_id)) {
        // A group still gives this inbound: revoking takes away the direct grant only.
        if (!grant.is_own) throw grantedByGroup(grant.user_id);
        await this.access.clearOwn(grant.id);
        return;
      }
      await this.sync.removeGrant(grant, inbound);
      await this.access.deleteKeepingTraffic(grant);
    });
  }

  /**
   * Revokes the user's subscription: a new sub_token (the old URL is 404) and a new credential on
   * every grant, pushed to its core at once (the core's user is replaced), so old links stop
   * connecting. A core that cannot be reached leaves its grant pending with the new credential.
   */
  async revokeSubscription(userId: string): Promise<{ user: User; grants: AccessRecord[] }> {
    await this.users.get(userId);
    const grants = await this.access.listByUser(userId);
    const records: AccessRecord[] = [];
    for (const grant of grants) {
      records.push(
        await this.sync.exclusive(grant.server_inbound_id, async () => {
          const inbound = await this.inbounds.findInboundById(grant.server_inbound_id);
          if (inbound === undefined) return record(grant);
          const row = await this.#rotate(inbound, grant);
          const statuses = await this.sync.pushGrants(inbound, [row], limiter(1), {
            replaceFirst: new Set([row.id]),
          });
          const status = statuses.get(row.id);
          return record({
            ...row,
            sync_state: status?.state ?? row.sync_state,
            sync_error: status?.error ?? null,
          });
        }),
      );
    }
    const user = await this.users.rotateSubToken(userId);
    return { user, grants: records };
  }

  /** A fresh credential for the grant, stored (drawn again in the unlikely case the inbound has it). */
  async #rotate(inbound: InboundRow, grant: AccessRow): Promise<AccessRow> {
    const { protocol, shadowsocksMethod } = inbound.link_params;
    const taken = new Set([grant.credential]);
    for (let attempt = 1; ; attempt++) {
      const credential = drawCredential(protocol, shadowsocksMethod, taken);
      try {
        await this.access.setCredential(grant.id, credential);
        const revision = grant.sync_revision + 1;
        return { ...grant, credential, sync_state: "pending", sync_error: null, sync_revision: revision };
      } catch (error) {
        if (!(error instanceof CredentialTakenError) || attempt >= CREDENTIAL_ATTEMPTS) throw error;
      }
    }
  }

  async listForUser(userId: string, includeUris: boolean): Promise<AccessRecord[]> {
    await this.users.get(userId);
    if (!includeUris) return (await this.access.listByUser(userId)).map(record);
    const rows = await this.access.listLinksOfUser(userId);
    const links = linksByRow(rows);
    return rows.map((row, index) => ({
      ...record(row),
      ...(links[index]?.[0] === undefined ? {} : { uri: links[index][0].uri }),
      links: links[index] ?? [],
      protocol: row.link_params.protocol,
      server_name: row.server_name,
      inbound_tag: row.inbound_tag,
    }));
  }

  /** What the user's subscription holds: active grants on active inbounds. */
  async userConfigs(userId: string, includeQr = false): Promise<ClientConfig[]> {
    await this.users.get(userId);
    const rows = await this.access.listLinksOfUser(userId);
    return configsOf(
      rows.filter((row) => row.is_active && row.inbound_is_active),
      includeQr,
    );
  }

  async userInboundConfig(userId: string, inboundId: string, includeQr = false): Promise<ClientConfig> {
    await this.users.get(userId);
    const row = await this.access.findLink(userId, inboundId);
    if (row === undefined) throw new NotFoundError(`access grant of user ${userId} on inbound`, inboundId);
    const [config] = configsOf([row], includeQr);
    if (config === undefined) {
      throw new UnprocessableError(
        "no share link can be written for this inbound",
        undefined,
        "invalid_link_target",
      );
    }
    return config;
  }

  /** One configuration per user of the inbound. */
  async inboundConfigs(serverId: string, inboundId: string, includeQr = false): Promise<ClientConfig[]> {
    await this.servers.get(serverId);
    await this.inbounds.getInbound(serverId, inboundId);
    return configsOf(await this.access.listLinksOfInbound(inboundId), includeQr);
  }

  async #existingUser(id: string, ownerId: string | undefined): Promise<User> {
    try {
      if (!(await this.#owns(ownerId, id))) throw new NotFoundError("user", id);
      return await this.users.get(id);
    } catch (error) {
      throw notFoundAt(error, "body.user_id", "no such user");
    }
  }

  /** Whether `ownerId` (undefined: anyone) may act on the user. */
  async #owns(ownerId: string | undefined, userId: string): Promise<boolean> {
    return ownerId === undefined || (await this.users.ownerOf(userId)) === ownerId;
  }

  /** A fresh credential, drawn again (never the same twice) in the unlikely case the inbound has it. */
  async #insert(inbound: InboundRow, userId: string, level: number): Promise<AccessRow> {
    const now = this.now().toISOString();
    const tried = new Set<string>();
    for (let attempt = 1; ; attempt++) {
      const row = newGrantRow(inbound, userId, level, now, tried);
      try {
        await this.access.insertAccess(row);
        return row;
      } catch (error) {
        if (!(error instanceof CredentialTakenError) || attempt >= CREDENTIAL_ATTEMPTS) throw error;
      }
    }
  }
}

function grantedByGroup(userId: string): ConflictError {
  return new ConflictError(
    `user ${userId} holds this inbound through a group only: remove the user from the group, or the inbound from the group`,
    "granted_by_group",
  );
}

/** The new user a grant without user_id creates; name is required then. */
function newUserOf(input: GrantCreate): UserCreate {
  const name = input.name?.trim() ?? "";
  if (name === "") {
    const message = "is required when user_id is not given (a new user is created)";
    throw new ValidationError(`name ${message}`, [{ path: "body.name", message }]);
  }
  return {
    name,
    ...(input.comment === undefined ? {} : { comment: input.comment }),
    ...(input.telegram_id === undefined ? {} : { telegram_id: input.telegram_id }),
  };
}

function record(row: AccessRow): AccessRecord {
  return {
    id: row.id,
    user_id: row.user_id,
    server_inbound_id: row.server_inbound_id,
    proxy_user_id: row.proxy_user_id,
    level: row.level,
    is_active: row.is_active,
    is_own: row.is_own,
    sync_state: row.sync_state,
    sync_error: row.sync_error,
    uplink_bytes: row.uplink_bytes,
    downlink_bytes: row.downlink_bytes,
    created_at: row.created_at,
  };
}

/**
 * The links of each row as the user's /sub writes them (one per enabled host of the inbound, per-user
 * remark variables filled, remarks unique within each user's list), in the rows' order.
 */
function linksByRow(rows: readonly AccessLinkRow[]): EntryLink[][] {
  const byUser = new Map<string, number[]>();
  rows.forEach((row, index) => {
    const list = byUser.get(row.user_id) ?? [];
    list.push(index);
    byUser.set(row.user_id, list);
  });
  const out: EntryLink[][] = rows.map(() => []);
  const nowMs = Date.now();
  for (const indexes of byUser.values()) {
    const first = rows[indexes[0] as number] as AccessLinkRow;
    const values = valuesOf(first.user, nowMs);
    const links = entryLinksOf(
      indexes.map((index) => rows[index] as AccessLinkRow),
      values,
    );
    indexes.forEach((index, i) => {
      out[index] = links[i] ?? [];
    });
  }
  return out;
}

function valuesOf(user: AccessLinkRow["user"], nowMs: number): UserValues {
  return userValues(
    {
      name: user.name,
      status: user.status,
      usedBytes: user.usedBytes,
      totalBytes: user.dataLimitBytes ?? 0,
      expireS: user.expireAt === null ? 0 : Date.parse(user.expireAt) / 1000,
    },
    nowMs,
  );
}

/** One per link (`links` of each row); `qr_code`: null, or with includeQr an SVG data: URI of the link's QR code. */
function configsOf(rows: readonly AccessLinkRow[], includeQr = false): ClientConfig[] {
  const links = linksByRow(rows);
  return rows.flatMap((row, index) =>
    (links[index] ?? []).map(({ remark, uri }) => ({
      user_id: row.user_id,
      server_name: row.server_name,
      inbound_tag: row.inbound_tag,
      protocol: row.link_params.protocol,
      remark,
      uri,
      qr_code: includeQr ? qrSvgDataUri(uri) : null,
    })),
  );
}
