// Proxy cores in memory behind the real CoreClient interface: the middle ring of tests. Rules such as
// "revoking a grant removes the user from the core" or "a restarted core is re-applied in full" run
// in milliseconds against these, on every save; the real V2Ray tests stay the outer ring that proves
// the bytes. A core keeps what the real ones keep (inbounds by tag, users by email), refuses what they
// refuse (a duplicate tag or email, an unknown tag or user: CoreConflictError, CoreNotFoundError), checks
// every request with the real client's guards, and can be stopped, started and restarted (which
// loses everything, like a real core). Clocks are injected.
import type { CoreClient } from "../../src/cores/core-client.ts";
import type {
  CoreFlavor,
  CoreInboundInfo,
  CoreInboundUser,
  CoreStat,
  CoreSysStats,
  CoreTraffic,
  InboundRef,
} from "../../src/cores/core-types.ts";
import type { GrpcCoreClientOptions } from "../../src/cores/grpc-core-client.ts";
import type { BuiltInbound, BuiltUser } from "../../src/cores/inbound-builder/built.ts";
import {
  inboundGuardProblems,
  summarizeBuiltInbound,
  userGuardProblems,
} from "../../src/cores/inbound-builder/guards.ts";
import { emptyTraffic } from "../../src/cores/traffic-scan.ts";
import {
  type BuildTarget,
  type CoreCapability,
  type CoreProfile,
  layoutFlavor,
  targetLayout,
  type WireLayout,
} from "../../src/cores/wire-layout.ts";
import {
  CoreConflictError,
  CoreNotFoundError,
  CoreRequestRefusedError,
  CoreUnavailableError,
  CoreUnsupportedError,
} from "../../src/lib/errors.ts";

type HeldUser = { level: number; credential: string | null };
type HeldInbound = { built: BuiltInbound; users: Map<string, HeldUser> };

/** Every call made to a core, in order: `AddUser tag email`, `RemoveInbound tag`, … */
export type CallLog = string[];

export class MemoryCore {
  readonly inbounds = new Map<string, HeldInbound>();
  readonly layout: WireLayout;
  readonly flavor: CoreFlavor;
  /** What the layout's release answers: listing from Xray 25.x on (the memory cores model 25.10). */
  readonly capabilities: CoreCapability[];
  readonly calls: CallLog = [];
  #isUp = true;
  #startedAtMs: number;
  #allocatedBytes = 1_000_000;

  constructor(
    readonly address: string,
    target: BuildTarget,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.layout = targetLayout(target);
    this.flavor = layoutFlavor(this.layout);
    this.capabilities = this.layout === "xray-25.10" || this.layout === "xray-25.1" ? ["listing"] : [];
    this.#startedAtMs = nowMs() - 60_000;
  }

  /** The emails on an inbound, sorted; undefined when the core does not hold the inbound. */
  usersOf(tag: string): string[] | undefined {
    const inbound = this.inbounds.get(tag);
    return inbound === undefined ? undefined : [...inbound.users.keys()].sort();
  }

  tags(): string[] {
    return [...this.inbounds.keys()].sort();
  }

  /** Unreachable until start(): every call fails with CoreUnavailableError, as a dead process would. */
  stop(): void {
    this.#isUp = false;
  }

  start(): void {
    this.#isUp = true;
  }

  /** A new process: everything the API added is gone and the uptime starts again. */
  restart(): void {
    this.inbounds.clear();
    this.#startedAtMs = this.nowMs();
    this.#allocatedBytes = 1_000_000;
    this.#isUp = true;
  }

  /** Called by the client for every request: fails while the core is down, and logs the call. */
  receive(call: string): void {
    if (!this.#isUp)
      throw new CoreUnavailableError(`core ${this.address} ${call}: core unreachable (stopped)`);
    this.calls.push(call);
    this.#allocatedBytes += 10_000;
  }

  sysStats(): CoreSysStats {
    return {
      uptimeSeconds: Math.floor((this.nowMs() - this.#startedAtMs) / 1000),
      goroutines: 10,
      gcCount: 1,
      allocBytes: this.#allocatedBytes,
      totalAllocBytes: this.#allocatedBytes,
      sysBytes: 10_000_000,
      mallocs: 1,
      frees: 1,
      liveObjects: 1,
      pauseTotalNs: 1,
    };
  }
}

/** Cores by address; `connect` is what the app's CorePool uses instead of a gRPC client. */
export class MemoryFleet {
  readonly #cores = new Map<string, MemoryCore>();

  constructor(private readonly nowMs: () => number = Date.now) {}

  /** A core at host:port, e.g. the server registered with hostname 127.0.0.1 and that grpc_port. */
  add(port: number, target: BuildTarget = "v2ray"): MemoryCore {
    const core = new MemoryCore(`127.0.0.1:${port}`, target, this.nowMs);
    this.#cores.set(core.address, core);
    return core;
  }

  readonly connect = (options: GrpcCoreClientOptions): CoreClient =>
    new MemoryCoreClient(options.address, this.#cores.get(options.address), options.layout ?? null);
}

class MemoryCoreClient implements CoreClient {
  readonly version = null;
  #profile: CoreProfile | null;

  constructor(
    readonly address: string,
    private readonly core: MemoryCore | undefined,
    layout: WireLayout | null,
  ) {
    this.#profile = layout === null ? null : { layout, capabilities: this.core?.capabilities ?? [] };
  }

  get flavor(): CoreFlavor | null {
    return this.#profile === null ? null : layoutFlavor(this.#profile.layout);
  }

  get layout(): WireLayout | null {
    return this.#profile?.layout ?? null;
  }

  get capabilities(): readonly CoreCapability[] | null {
    return this.#profile?.capabilities ?? null;
  }

  async detectLayout(): Promise<CoreProfile> {
    this.#profile ??= await this.redetectLayout();
    return this.#profile;
  }

  /** The probe's answer: the layout and capabilities of whatever process listens now. */
  async redetectLayout(): Promise<CoreProfile> {
    const core = this.#reach("ProbeLayout");
    this.#profile = { layout: core.layout, capabilities: [...core.capabilities] };
    return this.#profile;
  }

  async onlineUsers(): Promise<string[]> {
    this.#reach("GetAllOnlineUsers");
    throw new CoreUnsupportedError("GetAllOnlineUsers needs Xray 26.x");
  }

  #reach(call: string): MemoryCore {
    if (this.core === undefined)
      throw new CoreUnavailableError(`core ${this.address} ${call}: nothing listens`);
    this.core.receive(call);
    return this.core;
  }

  async detectFlavor(): Promise<CoreFlavor> {
    return layoutFlavor((await this.detectLayout()).layout);
  }

  async getSysStats(): Promise<CoreSysStats> {
    return this.#reach("GetSysStats").sysStats();
  }

  async queryStats(_pattern: string, _reset: boolean): Promise<CoreStat[]> {
    this.#reach("QueryStats");
    return [];
  }

  async queryTraffic(_reset: boolean): Promise<CoreTraffic> {
    this.#reach("QueryStats");
    return emptyTraffic();
  }

  async addInbound(inbound: BuiltInbound): Promise<void> {
    const core = this.#reach(`AddInbound ${inbound.ref.tag}`);
    const problems = [
      ...inboundGuardProblems(inbound),
      ...(inbound.layout === core.layout ? [] : [{ path: "layout", message: `core speaks ${core.layout}` }]),
    ];
    if (problems.length > 0) throw new CoreRequestRefusedError("refused to send AddInbound", problems);
    if (core.inbounds.has(inbound.ref.tag)) {
      throw new CoreConflictError(`core ${this.address} AddInbound: existing tag found: ${inbound.ref.tag}`);
    }
    const inline = summarizeBuiltInbound(inbound).users ?? [];
    const users = new Map(inline.map((user) => [user.email, { level: 0, credential: user.credential }]));
    core.inbounds.set(inbound.ref.tag, { built: inbound, users });
  }

  async replaceInbound(inbound: BuiltInbound): Promise<void> {
    await this.removeInbound(inbound.ref.tag).catch((error: unknown) => {
      if (!(error instanceof CoreNotFoundError)) throw error;
    });
    await this.addInbound(inbound);
  }

  async removeInbound(tag: string): Promise<void> {
    const core = this.#reach(`RemoveInbound ${tag}`);
    if (!core.inbounds.delete(tag))
      throw new CoreNotFoundError(`core ${this.address}: handler not found: ${tag}`);
  }

  async addUser(ref: InboundRef, user: BuiltUser): Promise<void> {
    const core = this.#reach(`AddUser ${ref.tag} ${user.email}`);
    const problems = userGuardProblems(core.layout, ref, user);
    if (problems.length > 0)
      throw new CoreRequestRefusedError("refused to send AlterInbound AddUser", problems);
    const inbound = core.inbounds.get(ref.tag);
    if (inbound === undefined)
      throw new CoreNotFoundError(`core ${this.address}: handler not found: ${ref.tag}`);
    if (inbound.users.has(user.email)) {
      throw new CoreConflictError(`core ${this.address}: User ${user.email} already exists.`);
    }
    inbound.users.set(user.email, { level: user.user.level, credential: user.credential });
  }

  async removeUser(tag: string, email: string): Promise<void> {
    const core = this.#reach(`RemoveUser ${tag} ${email}`);
    const inbound = core.inbounds.get(tag);
    if (inbound === undefined || !inbound.users.delete(email)) {
      throw new CoreNotFoundError(`core ${this.address}: User ${email} not found.`);
    }
  }

  async listInbounds(): Promise<CoreInboundInfo[]> {
    const core = this.#xrayOnly("ListInbounds");
    return [...core.inbounds.values()].map(({ built }) => ({
      tag: built.ref.tag,
      protocol: built.ref.protocol,
      proxyType: null,
      portRanges: [[built.port, built.port]],
    }));
  }

  async listInboundUsers(tag: string): Promise<CoreInboundUser[]> {
    const inbound = this.#xrayOnly(`GetInboundUsers ${tag}`).inbounds.get(tag);
    if (inbound === undefined) throw new CoreNotFoundError(`core ${this.address}: handler not found: ${tag}`);
    return [...inbound.users].map(([email, user]) => ({ email, ...user, accountType: null }));
  }

  async countInboundUsers(tag: string): Promise<number> {
    return (await this.listInboundUsers(tag)).length;
  }

  close(): void {}

  #xrayOnly(call: string): MemoryCore {
    const core = this.#reach(call);
    if (!core.capabilities.includes("listing")) {
      throw new CoreUnsupportedError(`${call} is not available on ${core.layout} cores`);
    }
    return core;
  }
}
