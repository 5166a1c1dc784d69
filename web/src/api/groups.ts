// Groups and plans (issue 49): queries from keys.ts and the calls that change them.
import { useQuery } from "@tanstack/react-query";
import { api, byId, unwrap } from "./client.ts";
import { keys } from "./keys.ts";
import type { paths } from "./schema";
import type { GroupInput, GroupUpdate, PlanInput, PlanUpdate } from "./types.ts";

export type MembersChangeBody = NonNullable<
  paths["/api/groups/{id}/members"]["post"]["requestBody"]
>["content"]["application/json"];

export function useGroups(enabled = true) {
  return useQuery({
    queryKey: keys.groups.list(),
    queryFn: () => unwrap(api.GET("/api/groups")),
    enabled,
  });
}

export function useGroup(id: string) {
  return useQuery({
    queryKey: keys.groups.one(id),
    queryFn: () => unwrap(api.GET("/api/groups/{id}", byId(id))),
  });
}

export function useGroupMembers(id: string, after: string | undefined, enabled = true) {
  return useQuery({
    queryKey: keys.groups.members(id, after ?? ""),
    queryFn: () =>
      unwrap(
        api.GET("/api/groups/{id}/members", {
          params: { path: { id }, query: { limit: 100, ...(after === undefined ? {} : { after }) } },
        }),
      ),
    enabled,
  });
}

export const groupsApi = {
  create: (body: GroupInput) => unwrap(api.POST("/api/groups", { body })),
  update: (id: string, body: GroupUpdate) => unwrap(api.PUT("/api/groups/{id}", { ...byId(id), body })),
  remove: (id: string) => unwrap(api.DELETE("/api/groups/{id}", byId(id))),
  addInbounds: (id: string, inboundIds: string[]) =>
    unwrap(api.POST("/api/groups/{id}/inbounds", { ...byId(id), body: { inbound_ids: inboundIds } })),
  removeInbound: (id: string, inboundId: string) =>
    unwrap(
      api.DELETE("/api/groups/{id}/inbounds/{inbound_id}", {
        params: { path: { id, inbound_id: inboundId } },
      }),
    ),
  addMembers: (id: string, body: MembersChangeBody) =>
    unwrap(api.POST("/api/groups/{id}/members", { ...byId(id), body })),
  removeMembers: (id: string, body: MembersChangeBody) =>
    unwrap(api.POST("/api/groups/{id}/members/remove", { ...byId(id), body })),
  removeMember: (id: string, userId: string) =>
    unwrap(api.DELETE("/api/groups/{id}/members/{user_id}", { params: { path: { id, user_id: userId } } })),
};

export function usePlans(enabled = true) {
  return useQuery({ queryKey: keys.plans.list(), queryFn: () => unwrap(api.GET("/api/plans")), enabled });
}

export const plansApi = {
  create: (body: PlanInput) => unwrap(api.POST("/api/plans", { body })),
  update: (id: string, body: PlanUpdate) => unwrap(api.PUT("/api/plans/{id}", { ...byId(id), body })),
  remove: (id: string) => unwrap(api.DELETE("/api/plans/{id}", byId(id))),
  renew: (userId: string, planId: string) =>
    unwrap(api.POST("/api/users/{id}/renew", { ...byId(userId), body: { plan_id: planId } })),
};
