// CoreClient over gRPC: detects the flavor once, sends only builder output through the request
// guards, and works around V2Ray 4.x's quirks (failed AddInbound still registers its tag).

import {
  CoreConflictError,
  CoreError,
  CoreNotFoundError,
  CoreRequestRefusedError,
  CoreUnsupportedError,
} from "../lib/errors.ts";
import type { CoreClient } from "./core-client.ts";
import type {
  CoreFlavor,
  CoreInboundInfo,
  CoreInboundUser,
  CoreStat,
  CoreSysStats,
  InboundRef,
  Problem,
} from "./core-types.ts";
import { type FlavorApi, type PreparedCall, refuseIfAny } from "./flavor-api.ts";
import { type ChannelSettings, CoreChannel } from "./grpc-channel.ts";
import type { BuiltInbound, BuiltUser } from "./inbound-builder/built.ts";
import { summarizeBuiltInbound, userGuardProblems } from "./inbound-builder/guards.ts";
import { v2rayApi } from "./v2ray-api.ts";
import { xrayApi } from "./xray-api.ts";

export type GrpcCoreClientOptions = ChannelSettings & {
  /** The flavor stored with the server; skips detection. */
  flavor?: CoreFlavor | null;
  /** The namespace tried first when detecting. Default "xray". */
  preferFlavor?: CoreFlavor;
  /** Tags never removed through this client: the core's API inbound. Default ["api"]. */
  protectedTags?: readonly string[];
};

const APIS: Record<CoreFlavor, FlavorApi> = { xray: xrayApi, v2ray: v2rayApi };

export class GrpcCoreClient implements CoreClient {
  readonly address: string;
  readonly version: string | null = null;
  private detected: CoreFlavor | null;
  private detecting: Promise<CoreFlavor> | null = null;
  private readonly channel: CoreChannel;
  private readonly preferFlavor: CoreFlavor;
  private readonly protectedTags: readonly string[];
  /** Inbounds added through this client, to refuse duplicate tags and mismatched users. */
  private readonly added = new Map<string, InboundRef>();

  constructor(options: GrpcCoreClientOptions) {
    this.address = options.address;
    this.channel = new CoreChannel(options);
    this.detected = options.flavor ?? null;
    this.preferFlavor = options.preferFlavor ?? "xray";
    this.protectedTags = options.protectedTags ?? ["api"];
  }

  get flavor(): CoreFlavor | null {
    return this.detected;
  }

  detectFlavor(): Promise<CoreFlavor> {
    if (this.detected !== null) return Promise.resolve(this.detected);
    this.detecting ??= this.probeFlavor().finally(() => {
      this.detecting = null;
    });
    return this.detecting;
  }

  /** GetSysStats on one namespace; UNIMPLEMENTED means the other dialect. */
  private async probeFlavor(): Promise<CoreFlavor> {
    const order: CoreFlavor[] = this.preferFlavor === "xray" ? ["xray", "v2ray"] : ["v2ray", "xray"];
    for (const flavor of order) {
      try {
        await this.channel.call(APIS[flavor].getSysStats());
        this.detected = flavor;
        return flavor;
      } catch (error) {
        if (!(error instanceof CoreUnsupportedError)) throw error;
      }
    }
    throw new CoreUnsupportedError(`core ${this.address} speaks neither the Xray nor the V2Ray 4.x API`);
  }

  private async api(): Promise<FlavorApi> {
    return APIS[await this.detectFlavor()];
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
    const secrets = (summarizeBuiltInbound(inbound).users ?? []).flatMap((user) => user.credential ?? []);
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
    const flavor = await this.detectFlavor();
    const problems: Problem[] = userGuardProblems(flavor, inbound, user);
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

  private supported<F>(api: FlavorApi, call: F | undefined, method: string): F {
    if (call === undefined) {
      throw new CoreUnsupportedError(`${method} is not available on ${api.flavor} cores`);
    }
    return call;
  }

  close(): void {
    this.channel.close();
  }
}
