// One interface, two wire dialects: each flavor module turns a client operation into a method path
// plus request bytes, and response bytes back into flavor-neutral values.

import { CoreRequestRefusedError } from "../lib/errors.ts";
import type {
  CoreFlavor,
  CoreInboundInfo,
  CoreInboundUser,
  CoreStat,
  CoreSysStats,
  CoreTraffic,
  Problem,
} from "./core-types.ts";
import type { BuiltInbound, BuiltUser } from "./inbound-builder/built.ts";

export type PreparedCall<T> = {
  /** Short name for messages, e.g. "AlterInbound". */
  method: string;
  path: string;
  request: Uint8Array;
  decode: (response: Uint8Array) => T;
  /**
   * Time the core needs beyond the transport's per-call deadline: an AddInbound carrying thousands of
   * users inline takes the core longer than a small call (addInboundExtraMs).
   */
  extraTimeoutMs?: number;
};

/**
 * What the real V2Ray 4.34 core took per inline user of an AddInbound, measured (docs/CONVERGENCE.md):
 * vless and trojan about 0.02 ms, vmess 0.37-0.47 ms (its auth tables) on a two-core machine at load
 * 3-7. The deadline allows four times the slowest (a missed one means the whole inbound is sent again,
 * at the same cost), and at most INLINE_EXTRA_MAX_MS more than a small call: 3 MiB of VMess users is
 * about 30,000, which the core takes in 11-14 s.
 */
export const INLINE_USER_DEADLINE_MS = 2;
export const INLINE_EXTRA_MAX_MS = 60_000;

/** The extra deadline of an AddInbound that carries `users` users inline. */
export function addInboundExtraMs(users: number): number {
  return Math.min(INLINE_EXTRA_MAX_MS, Math.ceil(users * INLINE_USER_DEADLINE_MS));
}

export type FlavorApi = {
  readonly flavor: CoreFlavor;
  getSysStats(): PreparedCall<CoreSysStats>;
  queryStats(pattern: string, reset: boolean): PreparedCall<CoreStat[]>;
  /** QueryStats read as traffic totals in place (traffic-scan.ts), the API's inbound left out. */
  queryTraffic(pattern: string, reset: boolean): PreparedCall<CoreTraffic>;
  addInbound(inbound: BuiltInbound): PreparedCall<void>;
  removeInbound(tag: string): PreparedCall<void>;
  addUser(tag: string, user: BuiltUser): PreparedCall<void>;
  removeUser(tag: string, email: string): PreparedCall<void>;
  /** Absent where the core has no such call (V2Ray 4.x). */
  listInbounds?(): PreparedCall<CoreInboundInfo[]>;
  listInboundUsers?(tag: string): PreparedCall<CoreInboundUser[]>;
  countInboundUsers?(tag: string): PreparedCall<number>;
  /** Xray 26.x: emails of users with a live connection. */
  onlineUsers?(): PreparedCall<string[]>;
};

export function ignoreResponse(): void {}

export function refuseIfAny(problems: Problem[], what: string): void {
  if (problems.length > 0) throw new CoreRequestRefusedError(`refused to send ${what}`, problems);
}

export function refuseFlavor(expected: CoreFlavor, actual: CoreFlavor, what: string): never {
  throw new CoreRequestRefusedError(`refused to send ${what}`, [
    { path: "flavor", message: `built for ${actual}, the core speaks ${expected}` },
  ]);
}

export function refuseLayout(expected: string, actual: string, what: string): never {
  throw new CoreRequestRefusedError(`refused to send ${what}`, [
    {
      path: "layout",
      message: `built for wire layout ${actual}, the core speaks ${expected} (fields would land on other numbers)`,
    },
  ]);
}

type SysStatsLike = {
  Uptime: number;
  NumGoroutine: number;
  NumGC: number;
  Alloc: bigint;
  TotalAlloc: bigint;
  Sys: bigint;
  Mallocs: bigint;
  Frees: bigint;
  LiveObjects: bigint;
  PauseTotalNs: bigint;
};

export function toSysStats(response: SysStatsLike): CoreSysStats {
  return {
    uptimeSeconds: response.Uptime,
    goroutines: response.NumGoroutine,
    gcCount: response.NumGC,
    allocBytes: Number(response.Alloc),
    totalAllocBytes: Number(response.TotalAlloc),
    sysBytes: Number(response.Sys),
    mallocs: Number(response.Mallocs),
    frees: Number(response.Frees),
    liveObjects: Number(response.LiveObjects),
    pauseTotalNs: Number(response.PauseTotalNs),
  };
}
