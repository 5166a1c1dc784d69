// The fleet: the home page's overview and traffic, and a node server's agent (its report, its core's
// log, its base document, enrollment). Queries from keys.ts; the agent is asked only for `node` servers.
import { useQuery } from "@tanstack/react-query";
import { api, byId, unwrap } from "./client.ts";
import { keys } from "./keys.ts";
import { STATUS_POLL_MS } from "./servers.ts";

const DAY_MS = 86_400_000;

/** How often the log is read again while it is shown ("live"; the agent reads its last 200 lines). */
export const LOG_POLL_MS = 5_000;

export function useOverview() {
  return useQuery({
    queryKey: keys.overview,
    queryFn: () => unwrap(api.GET("/api/overview")),
    refetchInterval: STATUS_POLL_MS,
  });
}

export type DayTraffic = { start: string; uplink_bytes: number; downlink_bytes: number };

/** The last `days` UTC days (today included), every server's buckets added up per day, oldest first. */
export async function fleetTraffic(days: number, now = Date.now()): Promise<DayTraffic[]> {
  const end = (Math.floor(now / DAY_MS) + 1) * DAY_MS;
  const from = end - days * DAY_MS;
  const answer = await unwrap(
    api.GET("/api/usage", {
      params: {
        query: { from: new Date(from).toISOString(), to: new Date(end).toISOString(), granularity: "day" },
      },
    }),
  );
  const byDay = new Map<number, DayTraffic>();
  for (let at = from; at < end; at += DAY_MS) {
    byDay.set(at, { start: new Date(at).toISOString(), uplink_bytes: 0, downlink_bytes: 0 });
  }
  for (const server of answer.servers) {
    for (const bucket of server.buckets) {
      const day = byDay.get(Math.floor(new Date(bucket.start).getTime() / DAY_MS) * DAY_MS);
      if (day === undefined) continue;
      day.uplink_bytes += bucket.uplink_bytes;
      day.downlink_bytes += bucket.downlink_bytes;
    }
  }
  return [...byDay.values()];
}

export function useFleetTraffic(days: number) {
  return useQuery({
    queryKey: keys.fleetUsage(days),
    queryFn: () => fleetTraffic(days),
    refetchInterval: 60_000,
  });
}

export function useAgentStatus(id: string, enabled: boolean) {
  return useQuery({
    queryKey: keys.servers.node(id),
    queryFn: () => unwrap(api.GET("/api/servers/{id}/node", byId(id))),
    enabled,
    refetchInterval: STATUS_POLL_MS,
    retry: false,
  });
}

export function useNodeLog(id: string, options: { enabled: boolean; live: boolean }) {
  return useQuery({
    queryKey: keys.servers.nodeLog(id),
    queryFn: () => unwrap(api.GET("/api/servers/{id}/node-log", byId(id))),
    enabled: options.enabled,
    refetchInterval: options.live ? LOG_POLL_MS : false,
    retry: false,
  });
}

export function useNodeBase(id: string) {
  return useQuery({
    queryKey: keys.servers.nodeBase(id),
    queryFn: () => unwrap(api.GET("/api/servers/{id}/node-base", byId(id))),
  });
}

export const nodesApi = {
  enroll: (id: string) => unwrap(api.POST("/api/servers/{id}/node-enrollment", byId(id))),
  /** `null`: back to the default base. */
  setBase: (id: string, document: Record<string, unknown> | null) =>
    unwrap(api.PUT("/api/servers/{id}/node-base", { ...byId(id), body: { document } })),
};
