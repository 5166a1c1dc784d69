// New grant rows, for the single and the bulk grant alike: the user's id on the core, a fresh
// credential drawn once through sync's drawCredential, and 'pending' until the core has it; own
// (given directly) unless a group gives it.
import { randomUUID } from "node:crypto";
import type { InboundRow } from "../inbounds/inbounds.repository.ts";
import { drawCredential, proxyUserIdFor } from "../sync/credentials.ts";
import type { AccessRow } from "./access.repository.ts";

/** A row for one user, with a credential not in `taken` (the inbound's, or those already tried). */
export function newGrantRow(
  inbound: Pick<InboundRow, "id" | "server_id" | "link_params">,
  userId: string,
  level: number,
  now: string,
  taken: Set<string>,
  isOwn = true,
): AccessRow {
  const { protocol, shadowsocksMethod } = inbound.link_params;
  return {
    id: randomUUID(),
    user_id: userId,
    server_inbound_id: inbound.id,
    server_id: inbound.server_id,
    proxy_user_id: proxyUserIdFor(inbound.server_id, userId),
    credential: drawCredential(protocol, shadowsocksMethod, taken),
    level,
    is_active: true,
    sync_state: "pending",
    sync_error: null,
    sync_revision: 0,
    is_own: isOwn,
    uplink_bytes: 0,
    downlink_bytes: 0,
    created_at: now,
    updated_at: now,
  };
}
