// CoreClient over the core's gRPC API, reached directly or through the node agent (core-transport.ts):
// detects the core's wire layout once (layout-probe.ts) and again on demand after a restart, sends
// only builder output for that layout through the request guards, and works around V2Ray 4.x's
// quirks (failed AddInbound still registers its tag).

import {
  CoreConflictError,
  CoreError,
  CoreNotFoundError,
  CoreRequestRefusedError,
  CoreUnsupportedError,
} from "../lib/errors.ts";
import type { CoreClient } from "./core-client.ts";
import type { AgentLink, CoreTransport } from "./core-transport.ts";
import type {
  CoreFlavor,
  CoreInboundInfo,
  CoreInboundUser,
  CoreStat,
  CoreSysStats,
  CoreTraffic,
  InboundRef,
  Problem,
} from "./core-types.ts";
import { type FlavorApi, type PreparedCall, refuseIfAny } from "./flavor-api.ts";
import { type ChannelSettings, CoreChannel, DEFAULT_TIMEOUT_MS } from "./grpc-channel.ts";
import type { BuiltInbound, BuiltUser } from "./inbound-builder/built.ts";
import { inboundSecrets, userGuardProblems } from "./inbound-builder/guards.ts";
import { probeCapabilities, probeXrayProfile } from "./layout-probe.ts";
import { joinTraffic } from "./traffic-scan.ts";
import { v2rayApi } from "./v2ray-api.ts";
import {
  type CoreCapability,
  type CoreProfile,
  layoutFlavor,
  NEWEST_XRAY_LAYOUT,
  type WireLayout,
} from "./wire-layout.ts";
import { xrayApiFor } from "./xray-api.ts";

export type GrpcCoreClientOptions = ChannelSettings & {
  /**
   * The layout stored with the server: used without probing until redetectLayout(). A bare flavor
   * (tests, tools) stands for its newest layout.
   */
  layout?: WireLayout | null;
  /** The capabilities stored with the layout; probed (read-only calls) when absent. */
  capabilities?: readonly CoreCapability[] | null;
  /** The operator pinned the layout: never probed, redetectLayout() keeps it. */
  isLayoutPinned?: boolean;
  /** Tags never removed through this client: the core's API inbound. Default ["api"]. */
  protectedTags?: readonly string[];
  /** How calls travel (core-transport.ts); default a direct gRPC channel to `address`. */
  transport?: CoreTransport;
  /**
   * Deadline of a counter read with reset (queryTraffic(true)). Long, because an answer dropped at
   * the deadline is traffic lost: the core has reset its counters. Default 120000.
   */
  resetReadTimeoutMs?: number;
};

export const DEFAULT_RESET_READ_TIMEOUT_MS = 120_000;

const XRAY_APIS = new Map<WireLayout, FlavorApi>();

function apiFor(layout: WireLayout): FlavorApi {
  if (layoutFlavor(layout) === "v2ray") return v2rayApi;
  let api = XRAY_APIS.get(layout);
  if (api === undefined) {
    api = xrayApiFor(layout);
    XRAY_APIS.set(layout, api);
  }
  return api;
}

export class GrpcCoreClient implements CoreClient {
  readonly address: string;
  readonly version: string | null = null;
  private known: { layout: WireLayout | null; capabilities: CoreCapability[] | null };
  private detecting: Promise<CoreProfile> | null = null;
  private readonly isPinned: boolean;
  private readonly channel: CoreTransport;
  private readonly protectedTags: readonly string[];
  /** What a read with reset is allowed beyond the transport's deadline of every call. */
  private readonly resetReadExtraMs: number;
  /** Inbounds added through this client, to refuse duplicate tags and mismatched users. */
  private readonly added = new Map<string, InboundRef>();

  constructor(options: GrpcCoreClientOptions) {
    this.address = options.address;
    this.channel = options.transport ?? new CoreChannel(options);
    this.known = { layout: options.layout ?? null, capabilities: options.capabilities?.slice() ?? null };
    this.isPinned = options.isLayoutPinned === true && this.known.layout !== null;
    this.protectedTags = options.protectedTags ?? ["api"];
    const resetReadMs = options.resetReadTimeoutMs ?? DEFAULT_RESET_READ_TIMEOUT_MS;
    this.resetReadExtraMs = Math.max(0, resetReadMs - (options.timeoutMs ?? DEFAULT_TIMEOUT_MS));
  }

  get flavor(): CoreFlavor | null {
    return this.known.layout === null ? null : layoutFlavor(this.known.layout);
  }

  get layout(): WireLayout | null {
    return this.known.layout;
  }

  get capabilities(): readonly CoreCapability[] | null {
    return this.known.capabilities;
  }

  async detectFlavor(): Promise<CoreFlavor> {
    return layoutFlavor((await this.detectLayout()).layout);
  }

  /** The stored or pinned profile, or the probe's answer (probed once; concurrent callers share it). */
  detectLayout(): Promise<CoreProfile> {
    const { layout, capabilities } = this.known;
    if (layout !== null && capabilities !== null) return Promise.resolve({ layout, capabilities });
    this.detecting ??= this.probe(layout).finally(() => {
      this.detecting = null;
    });
    return this.detecting;
  }

  /** Forgets what was known (a new core process may be another release) and probes again. */
  async redetectLayout(): Promise<CoreProfile> {
    await this.detecting?.catch(() => {});
    // The inbounds this client added stay remembered: replaceInbound removes before it adds anyway.
    this.known = { layout: this.isPinned ? this.known.layout : null, capabilities: null };
    return this.detectLayout();
  }

  /**
   * GetSysStats on the xray namespace first: Xray also serves its API under the v2ray.core names
   * (with Xray's messages), V2Ray 4.x only there. Then, on Xray, the layout probe.
   */
  private async probe(pinned: WireLayout | null): Promise<CoreProfile> {
    const send = (call: PreparedCall<void>) => this.channel.call(call);
    if (pinned !== null) {
      const capabilities = layoutFlavor(pinned) === "xray" ? await probeCapabilities(send) : [];
      return this.remember({ layout: pinned, capabilities });
    }
    if (await this.answers(apiFor(NEWEST_XRAY_LAYOUT).getSysStats())) {
      return this.remember(await probeXrayProfile(send));
    }
    if (await this.answers(v2rayApi.getSysStats())) {
      return this.remember({ layout: "v2ray-4", capabilities: [] });
    }
    throw new CoreUnsupportedError(`core ${this.address} speaks neither the Xray nor the V2Ray 4.x API`);
  }

  /** Whether the call succeeds; false when the core does not implement it. */
  private async answers(call: PreparedCall<unknown>): Promise<boolean> {
    try {
      await this.channel.call(call);
      return true;
    } catch (error) {
      if (error instanceof CoreUnsupportedError) return false;
      throw error;
    }
  }

  private remember(profile: CoreProfile): CoreProfile {
    this.known = { layout: profile.layout, capabilities: [...profile.capabilities] };
    return profile;
  }

  private async api(): Promise<FlavorApi> {
    return apiFor((await this.detectLayout()).layout);
  }

  private async send<T>(
    prepare: (api: FlavorApi) => PreparedCall<T>,
    secrets: readonly string[] = [],
  ): Promise<T> {
    const prepared = prepare(await this.api());
    return this.channel.call(prepared, secrets);
  }

  getSysStats(): Promise<CoreSysStats> {
    return this.send((api) => api.getSysStats());
  }

  queryStats(pattern: string, reset: boolean): Promise<CoreStat[]> {
    return this.send((api) => api.queryStats(pattern, reset));
  }

  async queryTraffic(reset: boolean): Promise<CoreTraffic> {
    const extraTimeoutMs = reset ? this.resetReadExtraMs : 0;
    const read = (pattern: string) =>
      this.send((api) => ({ ...api.queryTraffic(pattern, reset), extraTimeoutMs }));
    const users = await read("user>>>");
    try {
      return joinTraffic(users, await read("inbound>>>"));
    } catch (error) {
      // The users' counters are reset on the core already: dropped for a failed inbound read they
      // would be lost for good. The inbound counters are read next time (or lost with a dead core);
      // a core that stays unreachable fails the next read's first call and the reconcile poll.
      if (reset && users.users.count > 0) return users;
      throw error;
    }
  }

  async addInbound(inbound: BuiltInbound): Promise<void> {
    const tag = inbound.ref.tag;
    refuseIfAny(
      this.protectedTags.includes(tag) ? [{ path: "tag", message: "is the API inbound's tag" }] : [],
      "AddInbound",
    );
    if (this.added.has(tag)) {
      throw new CoreConflictError(`inbound ${tag} was already added through this client; remove it first`);
    }
    // Claimed before anything is awaited, so two concurrent adds of one tag cannot both go out.
    this.added.set(tag, inbound.ref);
    try {
      await this.sendAddInbound(inbound);
    } catch (error) {
      this.added.delete(tag);
      throw error;
    }
  }

  private async sendAddInbound(inbound: BuiltInbound): Promise<void> {
    const api = await this.api();
    const prepared = api.addInbound(inbound);
    // The inline users' secrets were collected as they were appended (not decoded again here).
    const secrets = inboundSecrets(inbound);
    try {
      await this.channel.call(prepared, secrets);
    } catch (error) {
      // V2Ray 4.x registers the tag even when the listener fails (probe §4 g7-g9): undo that.
      if (error instanceof CoreError) {
        await this.channel.call(api.removeInbound(inbound.ref.tag)).catch(() => {});
      }
      throw error;
    }
  }

  /** RemoveInbound (if present) then AddInbound: the safe way to (re)apply an inbound on V2Ray 4.x. */
  async replaceInbound(inbound: BuiltInbound): Promise<void> {
    await this.removeInbound(inbound.ref.tag).catch((error: unknown) => {
      if (!(error instanceof CoreNotFoundError)) throw error;
    });
    await this.addInbound(inbound);
  }

  async removeInbound(tag: string): Promise<void> {
    refuseIfAny(
      this.protectedTags.includes(tag) ? [{ path: "tag", message: "is the API inbound's tag" }] : [],
      "RemoveInbound",
    );
    try {
      await this.send((api) => api.removeInbound(tag));
    } finally {
      this.added.delete(tag);
    }
  }

  async addUser(inbound: InboundRef, user: BuiltUser): Promise<void> {
    const { layout } = await this.detectLayout();
    const problems: Problem[] = userGuardProblems(layout, inbound, user);
    const known = this.added.get(inbound.tag);
    if (
      known !== undefined &&
      (known.protocol !== inbound.protocol || known.shadowsocksMethod !== inbound.shadowsocksMethod)
    ) {
      problems.push({
        path: "inbound",
        message: `${inbound.tag} was added as ${known.protocol}, not ${inbound.protocol}`,
      });
    }
    if (problems.length > 0) {
      throw new CoreRequestRefusedError("refused to send AlterInbound AddUser", problems);
    }
    await this.send((api) => api.addUser(inbound.tag, user), [user.credential]);
  }

  removeUser(tag: string, email: string): Promise<void> {
    return this.send((api) => api.removeUser(tag, email));
  }

  listInbounds(): Promise<CoreInboundInfo[]> {
    return this.send((api) => this.supported(api, api.listInbounds?.bind(api), "ListInbounds")());
  }

  listInboundUsers(tag: string): Promise<CoreInboundUser[]> {
    return this.send((api) => this.supported(api, api.listInboundUsers?.bind(api), "GetInboundUsers")(tag));
  }

  countInboundUsers(tag: string): Promise<number> {
    return this.send((api) =>
      this.supported(api, api.countInboundUsers?.bind(api), "GetInboundUsersCount")(tag),
    );
  }

  onlineUsers(): Promise<string[]> {
    return this.send((api) => this.supported(api, api.onlineUsers?.bind(api), "GetAllOnlineUsers")());
  }

  private supported<F>(api: FlavorApi, call: F | undefined, method: string): F {
    if (call === undefined) {
      throw new CoreUnsupportedError(`${method} is not available on ${api.flavor} cores`);
    }
    return call;
  }

  agentLink(): AgentLink | null {
    const transport = this.channel as CoreTransport & Partial<AgentLink>;
    return transport.kind === "node" && transport.json !== undefined ? (transport as AgentLink) : null;
  }

  close(): void {
    this.channel.close();
  }
}
