// Every inbound on every server, for the pickers that grant access "on any inbound in two clicks".
import { useQueries, useQuery } from "@tanstack/react-query";
import { api, unwrap } from "./client.ts";
import type { Inbound, Server } from "./types.ts";

export const serversQuery = {
  queryKey: ["servers"],
  queryFn: () => unwrap(api.GET("/api/servers")),
} as const;

export function inboundsQuery(serverId: string) {
  return {
    queryKey: ["servers", serverId, "inbounds"],
    queryFn: () =>
      unwrap(api.GET("/api/servers/{server_id}/inbounds", { params: { path: { server_id: serverId } } })),
  } as const;
}

export type InboundChoice = { server: Server; inbound: Inbound; label: string };

/** `enabled: false` for a role that may not read servers (support): no calls, no choices. */
export function useAllInbounds(enabled = true): {
  choices: InboundChoice[];
  isLoading: boolean;
  error: unknown;
} {
  const servers = useQuery({ ...serversQuery, enabled });
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
