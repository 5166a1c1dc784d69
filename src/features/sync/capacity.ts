// V2Ray 4.x shadowsocks inbounds hold exactly one user, given inside the inbound (holdsUserInline):
// grants beyond it are refused before anything is stored. One check for the single and the bulk
// grant, so both refuse the same thing the same way.
import type { CoreFlavor } from "../../cores/core-types.ts";
import { type ErrorDetail, UnprocessableError } from "../../lib/errors.ts";
import { holdsUserInline } from "./desired.ts";
import type { GrantStore, SyncInbound } from "./stores.ts";

export type CapacityDeps = {
  flavorOf(serverId: string): Promise<CoreFlavor | null>;
  grants: Pick<GrantStore, "listActiveIds">;
};

/** 422 core_capacity when `adding` more grants would not fit the inbound on its core. `at` names the request field. */
export async function checkCapacity(
  deps: CapacityDeps,
  inbound: Pick<SyncInbound, "id" | "server_id" | "link_params">,
  adding: number,
  at: ErrorDetail,
): Promise<void> {
  const { protocol } = inbound.link_params;
  if (adding === 0 || protocol !== "shadowsocks") return;
  const flavor = await deps.flavorOf(inbound.server_id);
  if (flavor === null || !holdsUserInline(protocol, flavor)) return;
  const existing = (await deps.grants.listActiveIds(inbound.id)).length;
  if (existing + adding <= 1) return;
  const detail =
    `this server's core (V2Ray 4.x) holds exactly one user per shadowsocks inbound; ${existing} granted, ` +
    `${adding} asked: create another inbound (another port) for each further user`;
  throw new UnprocessableError(detail, [at], "core_capacity");
}
