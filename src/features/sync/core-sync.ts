// The one place where database rows become core calls: an inbound and its active grants are built by
// the inbound builder (desired.ts) and pushed to the server's pooled CoreClient, and the outcome is
// written back as sync_state. A core that cannot be reached leaves the change stored and 'pending';
// a removal that cannot reach its core is queued in core_removals for the reconciler.
import type { Logger } from "pino";
import type { CoreClient } from "../../cores/core-client.ts";
import type { CoreFlavor } from "../../cores/core-types.ts";
import type { BuiltUser } from "../../cores/inbound-builder/built.ts";
import { INLINE_REQUEST_MAX_BYTES } from "../../cores/inbound-builder/inline-users.ts";
import {
  type CoreCapability,
  type CoreProfile,
  layoutFlavor,
  type WireLayout,
} from "../../cores/wire-layout.ts";
import type { SyncState } from "../../domain/sync.ts";
import {
  AppError,
  CoreDownError,
  CoreUnavailableError,
  type ErrorDetail,
  NotFoundError,
  UnprocessableError,
} from "../../lib/errors.ts";
import { KeyedLock } from "../../lib/keyed-lock.ts";
import { type Limiter, limiter } from "../../lib/limiter.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import type { CertificatesRepository } from "../certificates/certificates.repository.ts";
import type { ServersService } from "../servers/servers.service.ts";
import type { InboundSecrets } from "../templates/prepare.ts";
import type { TemplatesService } from "../templates/templates.service.ts";
import { checkCapacity } from "./capacity.ts";
import { CoreRemovals } from "./core-removals.ts";
import {
  type CertificateMaterial,
  type DesiredInbound,
  type DesiredInline,
  type DesiredInlineResult,
  type DesiredResult,
  desiredInbound,
  desiredInboundInSlices,
  desiredInlineInSlices,
  holdsUserInline,
} from "./desired.ts";
import { InboundMaterial } from "./material.ts";
import {
  forgetUnansweredAdds,
  type PushOutcome,
  pushUsers,
  removeInboundIfPresent,
  removeUserIfPresent,
  statusesOf,
  USER_PUSH_PARALLELISM,
  type UserPush,
} from "./push.ts";
import type { RemovalsRepository } from "./removals.repository.ts";
import { type GrantStore, type InboundStore, isOnCore, type SyncGrant, type SyncInbound } from "./stores.ts";
import { SyncRecorder } from "./sync-recorder.ts";

export type SyncStatus = { state: SyncState; error: string | null };

export type CoreSyncDeps = {
  inbounds: InboundStore;
  grants: GrantStore;
  removals: RemovalsRepository;
  templates: TemplatesService;
  servers: ServersService;
  certificates: CertificatesRepository;
  secretBox: SecretBox;
  logger: Logger;
  now?: () => Date;
  /**
   * The largest AddInbound request (bytes) a full apply fills with users inline; the users past it go
   * by AddUser. Default INLINE_REQUEST_MAX_BYTES (under grpc-go's 4 MiB); tests make it small.
   */
  inlineMaxBytes?: number;
};

export type Connected = {
  client: CoreClient;
  flavor: CoreFlavor;
  layout: WireLayout;
  capabilities: readonly CoreCapability[];
  /** The layout was probed by this very call (nothing was known): no need to ask again. */
  isFresh: boolean;
};

const SYNCED: SyncStatus = { state: "synced", error: null };

export class CoreSync {
  readonly #lock = new KeyedLock();
  readonly #now: () => Date;
  readonly #recorder: SyncRecorder;
  readonly #material: InboundMaterial;
  readonly #removals: CoreRemovals;

  constructor(private readonly deps: CoreSyncDeps) {
    this.#now = deps.now ?? (() => new Date());
    this.#recorder = new SyncRecorder(deps.grants, deps.removals);
    this.#material = new InboundMaterial(deps.templates, deps.certificates, deps.secretBox);
    this.#removals = new CoreRemovals(deps, {
      connect: (serverId) => this.connect(serverId),
      exclusive: (inboundId, task) => this.exclusive(inboundId, task),
      now: this.#now,
    });
  }

  /** Runs `task` alone for this inbound: checks, database writes and core calls do not interleave. */
  exclusive<T>(inboundId: string, task: () => Promise<T>): Promise<T> {
    return this.#lock.run(inboundId, task);
  }

  /** The server's core flavor: stored, or detected now (and stored); null when the core does not answer. */
  async flavorOf(serverId: string): Promise<CoreFlavor | null> {
    const layout = await this.layoutOf(serverId);
    return layout === null ? null : layoutFlavor(layout);
  }

  /** The server's wire layout: stored or pinned, or detected now (and stored); null when the core does not answer. */
  async layoutOf(serverId: string): Promise<WireLayout | null> {
    try {
      return (await this.connect(serverId)).layout;
    } catch (error) {
      if (error instanceof AppError) return null;
      throw error;
    }
  }

  /** 422 core_capacity before anything is stored when `adding` grants do not fit the inbound's core. */
  checkCapacity(
    inbound: Pick<SyncInbound, "id" | "server_id" | "link_params">,
    adding: number,
    at: ErrorDetail,
  ): Promise<void> {
    return checkCapacity(
      { flavorOf: (id) => this.flavorOf(id), grants: this.deps.grants },
      inbound,
      adding,
      at,
    );
  }

  certificateMaterial(id: string): Promise<CertificateMaterial> {
    return this.#material.certificate(id);
  }

  sealSecrets(secrets: InboundSecrets): string {
    return this.#material.seal(secrets);
  }

  openSecrets(sealed: string): InboundSecrets {
    return this.#material.open(sealed);
  }

  /**
   * Puts the inbound on its core exactly as stored (or takes it off when inactive), with every active
   * grant of an admitted user (docs/LIFECYCLE.md), `limit` user adds in flight. Grants added or revoked
   * meanwhile (by another instance) are caught up before it returns. `known`: the inbound's grants as
   * the caller just read them (the reconciler's snapshot), so they are not read again.
   *
   * Progress survives a core that stops answering halfway: once the inbound is on the core it is
   * recorded synced, the users that reached it synced and the rest pending, so the next pass adds only
   * those (an incremental reconcile) instead of replacing the inbound and pushing everyone again. The
   * status returned is then pending, with the core's error; `users` counts the users that reached it.
   */
  async applyInbound(
    inboundId: string,
    limit: Limiter = limiter(USER_PUSH_PARALLELISM),
    known?: readonly SyncGrant[],
  ): Promise<SyncStatus & { users: number }> {
    const inbound = await this.#inbound(inboundId);
    // Active grants of users who are not admitted are settled too: a replaced inbound holds none of them.
    const all = !inbound.is_active ? [] : (known ?? (await this.deps.grants.listByInbound(inbound.id)));
    const active = all.filter((grant) => grant.is_active);
    const grants = active.filter(isOnCore);
    const perGrant = new Map<string, SyncStatus>();
    let isPlaced = false;
    const status = await this.#whenReachable(inbound, async (connected) => {
      if (!inbound.is_active) return removeInboundIfPresent(connected.client, inbound.tag);
      // The users go inline in the AddInbound as far as the size cap allows (one call instead of one
      // AddUser each); the inbound's success puts them on the core with it. They are appended as they
      // are built, so only the users past the cap are held as built users (docs/benchmarks/fleet.md, Memory).
      const spec = await this.#material.specOf(inbound, grants);
      const split = orThrow(await desiredInlineInSlices(spec, connected.layout, this.#inlineCap()));
      if (split.request === undefined) return removeInboundIfPresent(connected.client, inbound.tag);
      const rest: DesiredInbound = { inbound: split.request, users: split.rest };
      await connected.client.replaceInbound(split.request);
      forgetUnansweredAdds(connected.client, inbound.tag);
      isPlaced = true;
      for (const grant of grants.slice(0, split.inlined)) perGrant.set(grant.id, SYNCED);
      const outcome = await this.#pushAll(connected, inbound, grants, rest, split.inlined, limit, perGrant);
      if (outcome?.isInboundMissing === true) isPlaced = false;
      if (outcome?.down !== undefined) throw outcome.down;
      if (outcome?.isInboundMissing === true)
        throw new CoreUnavailableError(`the core lost inbound ${inbound.tag} while it was applied`);
    });
    const row = isPlaced ? SYNCED : status;
    const stamp = row.state === "synced" ? this.#now().toISOString() : undefined;
    await this.deps.inbounds.setSyncState(inbound.id, row.state, row.error, stamp);
    const settled = active.map((grant) => ({ grant, status: perGrant.get(grant.id) ?? status }));
    await this.#recorder.grants(settled);
    if (row.state === "synced") await this.deps.removals.clearTag(inbound.server_id, inbound.tag);
    const users = status.state === "synced" ? grants.length : settled.filter(isSyncedOnCore).length;
    return { ...status, users };
  }

  /**
   * Users inline in AddInbound, up to the cap. Through a node agent too: it records each inline user
   * as the AddUser it replaces (cores/relay-record.ts), for its re-apply and its connection cuts.
   */
  #inlineCap(): number {
    return this.deps.inlineMaxBytes ?? INLINE_REQUEST_MAX_BYTES;
  }

  /**
   * The users of a freshly added inbound that did not go inline (from `inlined` on), then whatever
   * changed in the database meanwhile. Each grant's outcome goes into `perGrant`; a push that
   * stopped (the core went away or lost the inbound) is returned so the caller records what did
   * reach the core before it reports the stop.
   */
  async #pushAll(
    connected: Connected,
    inbound: SyncInbound,
    grants: readonly SyncGrant[],
    desired: DesiredInbound,
    inlined: number,
    limit: Limiter,
    perGrant: Map<string, SyncStatus>,
  ): Promise<PushOutcome | undefined> {
    const ref = desired.inbound?.ref;
    if (ref === undefined || holdsUserInline(ref.protocol, connected.flavor)) return undefined;
    // The inbound was just put on the core: no slot past the inline users holds a user yet.
    // (`desired.users` are the users past the inline ones: the first is grants[inlined]'s.)
    const pushes = grants.slice(inlined).map((grant, index) => ({
      ...userPush(grant, desired.users[index]),
      isSlotEmpty: true,
    }));
    const outcome = await pushUsers(connected.client, ref, pushes, limit);
    for (const [id, status] of statusesOf(outcome)) perGrant.set(id, status);
    if (outcome.down !== undefined || outcome.isInboundMissing) return outcome;
    const current = new Set(await this.deps.grants.listOnCoreIds(inbound.id));
    const known = new Set(grants.map((grant) => grant.id));
    for (const grant of grants.filter((g) => !current.has(g.id))) {
      await removeUserIfPresent(connected.client, ref.tag, grant.proxy_user_id);
    }
    const added = await this.deps.grants.findByIds([...current].filter((id) => !known.has(id)));
    if (added.length > 0) {
      const later = orThrow(desiredInbound(await this.#material.specOf(inbound, added), connected.layout));
      const more = await pushUsers(
        connected.client,
        ref,
        added.map((g, i) => userPush(g, later.users[i])),
        limit,
      );
      if (more.down !== undefined) return more;
    }
    return undefined;
  }

  /** Adds one new grant's user to the core; falls back to a full apply where a user cannot be added alone. */
  async addGrant(accessId: string): Promise<SyncStatus> {
    const grant = await this.deps.grants.findById(accessId);
    if (grant === undefined) throw new NotFoundError("access grant", accessId);
    const inbound = await this.#inbound(grant.server_inbound_id);
    const statuses = await this.pushGrants(inbound, [grant], limiter(1));
    return statuses.get(grant.id) ?? SYNCED;
  }

  /**
   * Adds these grants' users to a core that holds their inbound, `limit` at a time, and records each
   * grant's state. An inbound that is not on the core yet (pending, lost in a restart, or a V2Ray
   * shadowsocks inbound holding its user inline) is applied as a whole instead.
   */
  async pushGrants(
    inbound: SyncInbound,
    grants: readonly SyncGrant[],
    limit: Limiter,
    options: { replaceFirst?: ReadonlySet<string>; signal?: AbortSignal } = {},
  ): Promise<Map<string, SyncStatus>> {
    const unadmitted = await this.deps.grants.listUnadmittedUserIds(grants.map((grant) => grant.user_id));
    const onCore = (grant: SyncGrant) =>
      inbound.is_active && grant.is_active && !unadmitted.has(grant.user_id);
    const live = grants.filter(onCore);
    const idle = grants.filter((grant) => !onCore(grant));
    await this.#recorder.grants(idle.map((grant) => ({ grant, status: SYNCED })));
    if (live.length === 0) return new Map(grants.map((grant) => [grant.id, SYNCED]));
    if (inbound.sync_state !== "synced") return this.#applyFor(inbound, grants, limit);
    let outcome: PushOutcome | undefined;
    const stream = this.#recorder.whileRunning(live);
    const status = await this.#attempt(inbound.server_id, async (connected) => {
      const desired = orThrow(
        await desiredInboundInSlices(await this.#material.specOf(inbound, live), connected.layout),
      );
      const ref = desired.inbound?.ref;
      if (ref === undefined || holdsUserInline(ref.protocol, connected.flavor)) return;
      const replace = options.replaceFirst ?? new Set<string>();
      const pushes = live.map((grant, i) => ({
        ...userPush(grant, desired.users[i]),
        replaceFirst: replace.has(grant.id),
      }));
      const pushOptions = { onSynced: stream.onSynced, signal: options.signal };
      outcome = await pushUsers(connected.client, ref, pushes, limit, pushOptions);
    });
    const written = await stream.done();
    if (status.state === "synced" && (outcome === undefined || outcome.isInboundMissing)) {
      return this.#applyFor(inbound, grants, limit);
    }
    if (outcome?.down !== undefined) await this.#recordDown(inbound.server_id, outcome.down);
    const statuses = outcome === undefined ? new Map(live.map((g) => [g.id, status])) : statusesOf(outcome);
    const rest = live.filter((grant) => !written.has(grant.id) && statuses.has(grant.id));
    await this.#recorder.grants(rest.map((grant) => ({ grant, status: statuses.get(grant.id) ?? SYNCED })));
    const synced = live.filter((grant) => statuses.get(grant.id)?.state === "synced");
    await this.#recorder.usersBack(
      inbound.server_id,
      inbound.tag,
      synced.map((grant) => grant.proxy_user_id),
    );
    return new Map(grants.map((grant) => [grant.id, statuses.get(grant.id) ?? SYNCED]));
  }

  async #applyFor(inbound: SyncInbound, grants: readonly SyncGrant[], limit: Limiter) {
    const status = await this.applyInbound(inbound.id, limit);
    const after = new Map((await this.deps.grants.findByIds(grants.map((g) => g.id))).map((g) => [g.id, g]));
    return new Map(
      grants.map((grant) => {
        const row = after.get(grant.id);
        return [grant.id, row === undefined ? status : { state: row.sync_state, error: row.sync_error }];
      }),
    );
  }

  async #recordDown(serverId: string, error: AppError): Promise<void> {
    await this.deps.servers.recordUnreachable(serverId, "offline", error.message);
  }

  /** Takes a revoked grant off its core. Best effort: a removal that fails is queued, never thrown. */
  removeGrant(grant: SyncGrant, inbound: SyncInbound): Promise<void> {
    return this.#removals.removeGrant(grant, inbound);
  }

  /** Takes an inbound (about to be deleted or renamed) off its core. Best effort, like removeGrant. */
  removeInbound(inbound: Pick<SyncInbound, "server_id" | "tag" | "is_active" | "sync_state">): Promise<void> {
    return this.#removals.removeInbound(inbound);
  }

  /** Before a user is deleted: every grant off its core (queued where the core is unreachable). */
  revokeUser(userId: string): Promise<void> {
    return this.#removals.revokeUser(userId);
  }

  /** Before a server is deleted: its inbounds off the core, in parallel, without queueing (the server goes). */
  removeServerInbounds(serverId: string): Promise<void> {
    return this.#removals.removeServerInbounds(serverId);
  }

  /** An inactive inbound on a core that was never reached has nothing to take off it. */
  async #whenReachable(
    inbound: SyncInbound,
    work: (connected: Connected) => Promise<void>,
  ): Promise<SyncStatus> {
    if (!inbound.is_active && (await this.deps.servers.get(inbound.server_id)).core === null) return SYNCED;
    return this.#attempt(inbound.server_id, work);
  }

  async #attempt(serverId: string, work: (connected: Connected) => Promise<void>): Promise<SyncStatus> {
    try {
      await work(await this.connect(serverId));
      return SYNCED;
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error instanceof CoreDownError) {
        await this.deps.servers.recordUnreachable(serverId, "offline", error.message);
        return { state: "pending", error: error.message };
      }
      this.deps.logger.warn({ server_id: serverId, code: error.code }, "core refused a sync");
      return { state: "error", error: error.message };
    }
  }

  /** The server's pooled client and what its core speaks, detected (and stored) on the first contact. */
  async connect(serverId: string): Promise<Connected> {
    const client = await this.deps.servers.clientOf(serverId);
    const isKnown = client.layout !== null && client.capabilities !== null;
    const profile = await client.detectLayout();
    if (!isKnown) await this.deps.servers.recordReachable(serverId, profile, client.version);
    return connectedWith(client, profile, !isKnown);
  }

  /**
   * Asks the core again which layout it speaks (a restarted core may be another release), stores
   * the answer, and returns it with the layout it replaced (null: first detection, or unchanged).
   */
  async redetect(serverId: string): Promise<{ connected: Connected; replaced: WireLayout | null }> {
    const server = await this.deps.servers.get(serverId);
    const client = await this.deps.servers.clientOf(serverId);
    const profile = await client.redetectLayout();
    const isSame =
      server.wire_layout === profile.layout &&
      JSON.stringify(server.core_capabilities) === JSON.stringify(profile.capabilities);
    if (!isSame) await this.deps.servers.recordReachable(serverId, profile, client.version);
    const replaced =
      server.wire_layout !== null && server.wire_layout !== profile.layout ? server.wire_layout : null;
    if (replaced !== null) {
      this.deps.logger.info(
        { server_id: serverId, from: replaced, to: profile.layout },
        "core speaks another wire layout now",
      );
    }
    return { connected: connectedWith(client, profile, true), replaced };
  }

  async #inbound(id: string): Promise<SyncInbound> {
    const inbound = await this.deps.inbounds.findInboundById(id);
    if (inbound === undefined) throw new NotFoundError("inbound", id);
    return inbound;
  }
}

function connectedWith(client: CoreClient, profile: CoreProfile, isFresh: boolean): Connected {
  return {
    client,
    flavor: layoutFlavor(profile.layout),
    layout: profile.layout,
    capabilities: profile.capabilities,
    isFresh,
  };
}

/** The builder's refusal as the API's 422: nothing is sent to the core. */
export function orThrow(result: DesiredResult): DesiredInbound;
export function orThrow(result: DesiredInlineResult): DesiredInline;
export function orThrow(result: DesiredResult | DesiredInlineResult): DesiredInbound | DesiredInline {
  if (result.ok) return result.value;
  const listed = result.problems.map((p) => `${p.path} ${p.message}`).join("; ");
  const summary =
    result.code === "core_capacity" ? "the core cannot take this" : "the inbound does not build";
  throw new UnprocessableError(`${summary}: ${listed}`, result.problems, result.code);
}

function isSyncedOnCore(settled: { grant: SyncGrant; status: SyncStatus }): boolean {
  return settled.status.state === "synced" && isOnCore(settled.grant);
}

function userPush(grant: SyncGrant, user: BuiltUser | undefined): UserPush {
  if (user === undefined) throw new Error(`no built user for grant ${grant.id}`);
  return { accessId: grant.id, email: grant.proxy_user_id, user, replaceFirst: false };
}
