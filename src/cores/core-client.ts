// The only way the rest of Portcullis talks to a proxy core. Inbounds and users come from the
// inbound builder (cores/inbound-builder/build.ts); nothing else can be sent.

import type { AgentLink } from "./core-transport.ts";
import type {
  CoreFlavor,
  CoreInboundInfo,
  CoreInboundUser,
  CoreStat,
  CoreSysStats,
  CoreTraffic,
  InboundRef,
} from "./core-types.ts";
import type { BuiltInbound, BuiltUser } from "./inbound-builder/built.ts";
import type { CoreCapability, CoreProfile, WireLayout } from "./wire-layout.ts";

export interface CoreClient {
  readonly address: string;
  /** Known after detection (or when given); store it with the server. */
  readonly flavor: CoreFlavor | null;
  /** The wire layout the core speaks (wire-layout.ts); null until detected or given. */
  readonly layout: WireLayout | null;
  readonly capabilities: readonly CoreCapability[] | null;
  /** The core's version when the API reveals it; neither V2Ray 4.x nor Xray does, so null. */
  readonly version: string | null;

  /** The flavor of detectLayout(). */
  detectFlavor(): Promise<CoreFlavor>;
  /** The given/stored profile, or the layout probe's answer (layout-probe.ts); probed once. */
  detectLayout(): Promise<CoreProfile>;
  /** Probes again (unless the layout is pinned): the core process may be another release now. */
  redetectLayout(): Promise<CoreProfile>;
  getSysStats(): Promise<CoreSysStats>;
  /** Counters whose name contains `pattern` (a substring match on V2Ray 4.x). */
  queryStats(pattern: string, reset: boolean): Promise<CoreStat[]>;
  /**
   * The user and inbound traffic counters (what a traffic poll reads), summed per email and tag
   * without a message object per counter (traffic-scan.ts); the API's own inbound left out.
   */
  queryTraffic(reset: boolean): Promise<CoreTraffic>;

  /** Adds a built inbound; a tag this client already added is refused (V2Ray would leak the old one). */
  addInbound(inbound: BuiltInbound): Promise<void>;
  /** RemoveInbound (ignoring "not found") then AddInbound: how to (re)apply an inbound safely. */
  replaceInbound(inbound: BuiltInbound): Promise<void>;
  removeInbound(tag: string): Promise<void>;
  /** Adds a built user; refused unless its account type fits the inbound's protocol. */
  addUser(inbound: InboundRef, user: BuiltUser): Promise<void>;
  removeUser(tag: string, email: string): Promise<void>;

  /** Xray 25.x and later (capability listing); CoreUnsupportedError elsewhere. */
  listInbounds(): Promise<CoreInboundInfo[]>;
  listInboundUsers(tag: string): Promise<CoreInboundUser[]>;
  countInboundUsers(tag: string): Promise<number>;
  /** Xray 26.x only (capability online_users): emails of users with a live connection. */
  onlineUsers(): Promise<string[]>;

  /** A `node` server's agent (status, traffic journal, online addresses); absent for `direct`. */
  agentLink?(): AgentLink | null;

  close(): void;
}
