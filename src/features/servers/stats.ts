// Turns the core's flat counters (`inbound>>>TAG>>>traffic>>>uplink`, `user>>>EMAIL>>>traffic>>>…`)
// into the stats shape of the API. Pure, so it is tested without a core.
import type { CoreStat, CoreSysStats } from "../../cores/core-types.ts";
import type { ServerStats } from "./servers.schemas.ts";

type Traffic = { uplink_bytes: number; downlink_bytes: number };
const COUNTER = /^(inbound|user)>>>(.+)>>>traffic>>>(uplink|downlink)$/;

export function aggregateStats(
  sys: CoreSysStats,
  counters: CoreStat[],
  core: "xray" | "v2ray",
  hiddenInboundTags: readonly string[],
): Omit<ServerStats, "server_id" | "collected_at"> {
  const inbounds = new Map<string, Traffic>();
  const users = new Map<string, Traffic>();
  for (const stat of counters) {
    const match = COUNTER.exec(stat.name);
    if (match === null) continue;
    const [, kind, name = "", direction] = match;
    if (kind === "inbound" && hiddenInboundTags.includes(name)) continue;
    const map = kind === "inbound" ? inbounds : users;
    const entry = map.get(name) ?? { uplink_bytes: 0, downlink_bytes: 0 };
    entry[direction === "uplink" ? "uplink_bytes" : "downlink_bytes"] += Number(stat.value);
    map.set(name, entry);
  }
  const list = <K extends string>(map: Map<string, Traffic>, key: K) =>
    [...map]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, t]) => ({ [key]: name, ...t }) as Record<K, string> & Traffic);
  const inboundList = list(inbounds, "tag");
  return {
    core,
    core_version: null,
    uptime_seconds: sys.uptimeSeconds,
    memory: {
      alloc_bytes: sys.allocBytes,
      sys_bytes: sys.sysBytes,
      total_alloc_bytes: sys.totalAllocBytes,
      live_objects: sys.liveObjects,
      goroutines: sys.goroutines,
      gc_count: sys.gcCount,
    },
    traffic: inboundList.reduce(
      (sum, t) => ({
        uplink_bytes: sum.uplink_bytes + t.uplink_bytes,
        downlink_bytes: sum.downlink_bytes + t.downlink_bytes,
      }),
      { uplink_bytes: 0, downlink_bytes: 0 },
    ),
    inbounds: inboundList,
    users: list(users, "email"),
  };
}
