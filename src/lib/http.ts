// Types the route modules share: the Fastify instance with the TypeBox provider, the authenticated
// principal on each request, and the per-route `auth: false` flag for the few public routes.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { Permission, Role, ScopablePermission } from "./roles.ts";

/** Who made an authenticated request: an admin, through a login token or an API key, with a role. */
export type Principal = {
  adminId: string;
  username: string;
  tokenId: string;
  kind: "session" | "api_key";
  /** The role this request acts with: the admin's, or the API key's narrower one. */
  role: Role;
  /** The permissions the admin holds for their own users only (scope own); empty: all scope. */
  ownScope: readonly ScopablePermission[];
  /** The groups the admin may put users in; null: any group. */
  allowedGroupIds: readonly string[] | null;
  /** The plans the admin may use (create from, renew with, set as next plan); null: any plan. */
  allowedPlanIds: readonly string[] | null;
};

/** What the use cases need to know about who acts: role, scopes and the allowed groups and plans. */
export type Actor = Pick<Principal, "adminId" | "role" | "ownScope" | "allowedGroupIds" | "allowedPlanIds">;

/**
 * Whose users a request may act on with `permission`: the admin's own id when that permission is
 * held with scope own, undefined when every user (scope all).
 */
export function ownerScope(
  principal: Pick<Principal, "adminId" | "ownScope">,
  permission: Permission,
): string | undefined {
  return (principal.ownScope as readonly Permission[]).includes(permission) ? principal.adminId : undefined;
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal | undefined;
    /** The audit entry of this write, between its start (onRequest) and its outcome (onSend). */
    auditId: string | undefined;
    /** What a handler adds to its audit entry's targets (a bulk action: its kind and counts). */
    auditNotes: Record<string, string> | undefined;
  }
  interface FastifyContextConfig {
    /** false: reachable without a bearer token (token endpoint, docs, health, subscriptions) */
    auth?: boolean;
    /** false: NUL and nesting are not refused before the handler (it answers malformed input itself) */
    guardInput?: boolean;
    /** What the caller's role must hold; set from features/admins/permissions.ts when registered. */
    permission?: Permission;
    /** How the route reaches users, for own-scoped admins (features/admins/permissions.ts). */
    userReach?: { kind: "user"; param: string } | { kind: "owned" } | { kind: "fleet" } | { kind: "none" };
  }
}

export function principalOf(request: { principal: Principal | undefined }): Principal {
  if (request.principal === undefined) throw new Error("route reached without authentication");
  return request.principal;
}
