// Servers and their inbounds: queries from keys.ts and the calls that change them.
import { useQueries, useQuery } from "@tanstack/react-query";
import { api, byId, unwrap } from "./client.ts";
import { keys } from "./keys.ts";
import type { Inbound, InboundInput, InboundUpdate, Server, ServerInput, ServerUpdate } from "./types.ts";
import type { HistoryQuery } from "./users.ts";

/** How often server pages ask again: status is kept current by the service's reconciler. */
export const STATUS_POLL_MS = 5_000;

export const serversQuery = {
  queryKey: keys.servers.list(),
  queryFn: () => unwrap(api.GET("/api/servers")),
} as const;

export function inboundsQuery(serverId: string) {
  return {
    queryKey: keys.servers.inbounds(serverId),
    queryFn: () =>
      unwrap(api.GET("/api/servers/{server_id}/inbounds", { params: { path: { server_id: serverId } } })),
  } as const;
}

export function useServers(options: { poll?: boolean; enabled?: boolean } = {}) {
  return useQuery({
    ...serversQuery,
    enabled: options.enabled ?? true,
    refetchInterval: options.poll ? STATUS_POLL_MS : false,
  });
}

export function useServer(id: string) {
  return useQuery({
    queryKey: keys.servers.one(id),
    queryFn: () => unwrap(api.GET("/api/servers/{id}", byId(id))),
    refetchInterval: STATUS_POLL_MS,
  });
}

export function useInbounds(serverId: string) {
  return useQuery(inboundsQuery(serverId));
}

export function useServerStats(id: string) {
  return useQuery({
    queryKey: keys.servers.stats(id),
    queryFn: () => unwrap(api.GET("/api/servers/{id}/stats", byId(id))),
    refetchInterval: 10_000,
    retry: false,
  });
}

export async function serverHistory(serverId: string, range: HistoryQuery) {
  const answer = await unwrap(
    api.GET("/api/usage", { params: { query: { ...range, server_id: serverId } } }),
  );
  return answer.servers.find((s) => s.server_id === serverId)?.buckets ?? [];
}

export type InboundChoice = { server: Server; inbound: Inbound; label: string };

/** Every inbound on every server; `enabled: false` for a role that may not read servers (support). */
export function useAllInbounds(enabled = true): {
  choices: InboundChoice[];
  isLoading: boolean;
  error: unknown;
} {
  const servers = useServers({ enabled });
  const list = enabled ? (servers.data ?? []) : [];
  const inbounds = useQueries({ queries: list.map((server) => inboundsQuery(server.id)) });
  const choices: InboundChoice[] = [];
  for (const [i, server] of list.entries()) {
    for (const inbound of inbounds[i]?.data ?? []) {
      choices.push({
        server,
        inbound,
        label: `${server.name} · ${inbound.tag} (${inbound.template_name}, :${inbound.port_override})`,
      });
    }
  }
  return {
    choices,
    isLoading: servers.isLoading || inbounds.some((q) => q.isLoading),
    error: servers.error ?? inbounds.find((q) => q.error)?.error,
  };
}

type InboundPath = { server_id: string; inbound_id: string };

export const serversApi = {
  create: (body: ServerInput) => unwrap(api.POST("/api/servers", { body })),
  update: (id: string, body: ServerUpdate) => unwrap(api.PUT("/api/servers/{id}", { ...byId(id), body })),
  remove: (id: string) => unwrap(api.DELETE("/api/servers/{id}", byId(id))),
  test: (id: string) => unwrap(api.POST("/api/servers/{id}/test", byId(id))),
  sync: (id: string) => unwrap(api.POST("/api/servers/{id}/sync", byId(id))),
};

export const inboundsApi = {
  create: (serverId: string, body: InboundInput) =>
    unwrap(
      api.POST("/api/servers/{server_id}/inbounds", { params: { path: { server_id: serverId } }, body }),
    ),
  update: (path: InboundPath, body: InboundUpdate) =>
    unwrap(api.PUT("/api/servers/{server_id}/inbounds/{inbound_id}", { params: { path }, body })),
  remove: (path: InboundPath) =>
    unwrap(api.DELETE("/api/servers/{server_id}/inbounds/{inbound_id}", { params: { path } })),
  grant: (path: InboundPath, userId: string) =>
    unwrap(
      api.POST("/api/servers/{server_id}/inbounds/{inbound_id}/users", {
        params: { path },
        body: { user_id: userId },
      }),
    ),
  grantMany: (path: InboundPath, userIds: string[]) =>
    unwrap(
      api.POST("/api/servers/{server_id}/inbounds/{inbound_id}/users/bulk", {
        params: { path },
        body: { user_ids: userIds },
      }),
    ),
  revoke: (path: InboundPath & { email: string }) =>
    unwrap(api.DELETE("/api/servers/{server_id}/inbounds/{inbound_id}/users/{email}", { params: { path } })),
};
