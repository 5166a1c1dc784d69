// Users: their queries (key + fetch, from keys.ts) and the calls that change them.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, byId, unwrap } from "./client.ts";
import { keys } from "./keys.ts";
import type { paths } from "./schema";
import type { Usage, UsageSeries, UserInput, UserUpdate } from "./types.ts";

export type UserListQuery = NonNullable<paths["/api/users"]["get"]["parameters"]["query"]>;
export type BulkActionBody = NonNullable<
  paths["/api/users/bulk-actions"]["post"]["requestBody"]
>["content"]["application/json"];
export type BulkCreateBody = NonNullable<
  paths["/api/users/bulk"]["post"]["requestBody"]
>["content"]["application/json"];
export type HistoryQuery = { from: string; to: string; granularity: "hour" | "day" };

export function usersPageQuery(query: UserListQuery) {
  return {
    queryKey: keys.users.page(query),
    queryFn: ({ signal }: { signal: AbortSignal }) =>
      unwrap(api.GET("/api/users", { params: { query }, signal })),
  };
}

export function useUsersPage(query: UserListQuery, enabled: boolean) {
  return useQuery({ ...usersPageQuery(query), enabled, placeholderData: keepPreviousData });
}

export function useUserSearch(q: string) {
  return useQuery({
    queryKey: keys.users.search(q),
    queryFn: ({ signal }) => unwrap(api.GET("/api/users/search", { params: { query: { q } }, signal })),
    enabled: q.length > 0,
    placeholderData: keepPreviousData,
  });
}

export function useUser(id: string) {
  return useQuery({
    queryKey: keys.users.one(id),
    queryFn: () => unwrap(api.GET("/api/users/{id}", byId(id))),
  });
}

export function useUserAccess(id: string) {
  return useQuery({
    queryKey: keys.users.access(id),
    queryFn: () =>
      unwrap(api.GET("/api/users/{id}/access", { params: { path: { id }, query: { include_uris: true } } })),
  });
}

/** Without a query the usage endpoint answers the totals; with from, to and granularity, the history. */
export function useUserUsage(id: string) {
  return useQuery({
    queryKey: keys.users.usage(id),
    queryFn: async (): Promise<Usage> => {
      const answer = await unwrap(api.GET("/api/users/{id}/usage", byId(id)));
      if (!("servers" in answer)) throw new Error("expected the usage totals");
      return answer;
    },
  });
}

/** The user's devices (HWIDs) and device limit. */
export function useUserDevices(id: string) {
  return useQuery({
    queryKey: keys.users.devices(id),
    queryFn: () => unwrap(api.GET("/api/users/{id}/devices", byId(id))),
  });
}

/** The user's IP limit, block, addresses in the window and block history. */
export function useUserFairUse(id: string) {
  return useQuery({
    queryKey: keys.users.fairUse(id),
    queryFn: () => unwrap(api.GET("/api/users/{id}/fair-use", byId(id))),
  });
}

export async function userHistory(id: string, range: HistoryQuery): Promise<UsageSeries["buckets"]> {
  const answer = await unwrap(api.GET("/api/users/{id}/usage", { params: { path: { id }, query: range } }));
  if (!("buckets" in answer)) throw new Error("expected the usage history");
  return answer.buckets;
}

export const usersApi = {
  create: (body: UserInput) => unwrap(api.POST("/api/users", { body })),
  createMany: (body: BulkCreateBody) => unwrap(api.POST("/api/users/bulk", { body })),
  update: (id: string, body: UserUpdate) => unwrap(api.PUT("/api/users/{id}", { ...byId(id), body })),
  remove: (id: string) => unwrap(api.DELETE("/api/users/{id}", byId(id))),
  bulkAction: (body: BulkActionBody) => unwrap(api.POST("/api/users/bulk-actions", { body })),
  removeDevice: (id: string, deviceId: string) =>
    unwrap(
      api.DELETE("/api/users/{id}/devices/{device_id}", { params: { path: { id, device_id: deviceId } } }),
    ),
  moveOwner: (id: string, ownerAdminId: string | null) =>
    unwrap(api.PATCH("/api/users/{id}/owner", { ...byId(id), body: { owner_admin_id: ownerAdminId } })),
  revokeSubscription: (id: string) => unwrap(api.POST("/api/users/{id}/revoke-subscription", byId(id))),
};
