// Who is signed in and what they may do: GET /api/auth/me, asked once per token. The pages hide
// the actions the caller's role lacks; the service still decides (a 403's detail is shown).
import { useQuery } from "@tanstack/react-query";
import { api, unwrap } from "../api/client.ts";
import { keys } from "../api/keys.ts";
import type { Me, Role } from "../api/types.ts";
import { useToken } from "./session.ts";

/** The roles, most powerful first (the API's RoleSchema; a missing one fails the type-check below). */
export const ROLES = ["owner", "operator", "support", "viewer"] as const satisfies readonly Role[];
const _allRoles: Exclude<Role, (typeof ROLES)[number]> extends never ? true : never = true;
void _allRoles;

/** The permission names of `GET /api/auth/me`, from its schema (the service's lib/roles.ts). */
export type Permission = Me["permissions"][number];

export function meQuery(token: string | null) {
  return {
    queryKey: keys.me(token),
    queryFn: () => unwrap(api.GET("/api/auth/me")),
    enabled: token !== null,
    staleTime: 60_000,
  } as const;
}

export function useMe(): { me: Me | undefined; isLoading: boolean; error: unknown } {
  const token = useToken();
  const query = useQuery(meQuery(token));
  return { me: query.data, isLoading: query.isLoading, error: query.error };
}

/** `can("users.write")`: false until /me has answered, so nothing writable flashes up for a viewer. */
export function useCan(): (permission: Permission) => boolean {
  const { me } = useMe();
  return (permission) => me?.permissions.includes(permission) ?? false;
}
