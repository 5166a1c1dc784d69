// An inbound's hosts (issue 48): the ordered list and the calls that change it.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useRef } from "react";
import { notifyError } from "../ui/errors.tsx";
import { api, unwrap } from "./client.ts";
import { keys } from "./keys.ts";
import type { Host, HostInput, HostUpdate } from "./types.ts";

export type InboundPath = { server_id: string; inbound_id: string };

export function useHosts(path: InboundPath) {
  return useQuery({
    queryKey: keys.servers.hosts(path.server_id, path.inbound_id),
    queryFn: () =>
      unwrap(api.GET("/api/servers/{server_id}/inbounds/{inbound_id}/hosts", { params: { path } })),
  });
}

export const hostsApi = {
  create: (path: InboundPath, body: HostInput) =>
    unwrap(api.POST("/api/servers/{server_id}/inbounds/{inbound_id}/hosts", { params: { path }, body })),
  update: (path: InboundPath & { host_id: string }, body: HostUpdate) =>
    unwrap(
      api.PUT("/api/servers/{server_id}/inbounds/{inbound_id}/hosts/{host_id}", { params: { path }, body }),
    ),
  remove: (path: InboundPath & { host_id: string }) =>
    unwrap(
      api.DELETE("/api/servers/{server_id}/inbounds/{inbound_id}/hosts/{host_id}", { params: { path } }),
    ),
  reorder: (path: InboundPath, ids: string[]) =>
    unwrap(
      api.PUT("/api/servers/{server_id}/inbounds/{inbound_id}/hosts/order", {
        params: { path },
        body: { ids },
      }),
    ),
};

/**
 * Reordering: the new order is shown at once, and sent one request at a time (moves made while one
 * is on its way go in the next, as the latest order): two requests in flight could be stored in the
 * other order. A refused order shows the error and the stored order again.
 */
export function useReorderHosts(path: InboundPath): (hosts: Host[]) => void {
  const queryClient = useQueryClient();
  const key = keys.servers.hosts(path.server_id, path.inbound_id);
  const state = useRef<{ sending: boolean; next: Host[] | undefined }>({ sending: false, next: undefined });
  const send = async (hosts: Host[]): Promise<void> => {
    state.current.sending = true;
    try {
      const saved = await hostsApi.reorder(
        path,
        hosts.map((host) => host.id),
      );
      if (state.current.next === undefined) queryClient.setQueryData(key, saved);
    } catch (error) {
      state.current.next = undefined;
      notifyError(error);
      await queryClient.invalidateQueries({ queryKey: key });
    } finally {
      state.current.sending = false;
    }
    const next = state.current.next;
    state.current.next = undefined;
    if (next !== undefined) await send(next);
  };
  return (hosts) => {
    queryClient.setQueryData(key, hosts);
    if (state.current.sending) state.current.next = hosts;
    else void send(hosts);
  };
}
