// How several instances on one PostgreSQL database split the servers: every instance computes the
// same answer from the same two lists (server ids, live instance names), so nobody coordinates
// beyond the heartbeat rows. Each server goes to the instance that ranks highest for it (rendezvous
// hashing: a join or a leave moves mostly the servers of the instance that came or went), bounded so
// that every instance gets ⌊servers/instances⌋ or one more: an even split even for a small fleet.
import { createHash } from "node:crypto";

/** The servers each instance holds: every server exactly once, sizes differing by at most one. */
export function shareOut(serverIds: readonly string[], instances: readonly string[]): Map<string, string[]> {
  const names = [...new Set(instances)].sort();
  const shares = new Map(names.map((name) => [name, [] as string[]]));
  if (names.length === 0) return shares;
  const ids = [...new Set(serverIds)].sort();
  const base = Math.floor(ids.length / names.length);
  let largerLeft = ids.length % names.length;
  for (const id of ids) {
    const ranked = names
      .map((name) => ({ name, rank: rank(name, id) }))
      .sort((a, b) => (a.rank < b.rank ? 1 : a.rank > b.rank ? -1 : 0));
    for (const { name } of ranked) {
      const share = shares.get(name) as string[];
      if (share.length < base || (share.length === base && largerLeft > 0)) {
        if (share.length === base) largerLeft -= 1;
        share.push(id);
        break;
      }
    }
  }
  return shares;
}

function rank(instance: string, serverId: string): string {
  return createHash("sha256").update(instance).update("\0").update(serverId).digest("hex");
}
