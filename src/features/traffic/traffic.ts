// Turns the core's counters, read with reset, into deltas to add to the database's totals. Pure.
// A user's counters are keyed by their email on the core (the proxy_user_id), shared by all of that
// user's grants on one server; inbound counters by tag. Zero deltas are dropped: nothing to write.
import type { CoreStat } from "../../cores/core-types.ts";

export type Bytes = { uplinkBytes: number; downlinkBytes: number };
export type TrafficDeltas = { users: Map<string, Bytes>; inbounds: Map<string, Bytes> };

const COUNTER = /^(inbound|user)>>>(.+)>>>traffic>>>(uplink|downlink)$/;

export function parseTraffic(stats: readonly CoreStat[], hiddenTags: readonly string[]): TrafficDeltas {
  const deltas: TrafficDeltas = { users: new Map(), inbounds: new Map() };
  for (const stat of stats) {
    const match = COUNTER.exec(stat.name);
    if (match === null || stat.value <= 0n) continue;
    const [, kind, name = "", direction] = match;
    if (kind === "inbound" && hiddenTags.includes(name)) continue;
    add(kind === "user" ? deltas.users : deltas.inbounds, name, direction === "uplink", Number(stat.value));
  }
  return deltas;
}

/** Deltas that could not be written yet, added to the next ones (a failed write loses nothing). */
export function mergeTraffic(into: TrafficDeltas, more: TrafficDeltas): TrafficDeltas {
  for (const [key, bytes] of more.users) {
    add(into.users, key, true, bytes.uplinkBytes);
    add(into.users, key, false, bytes.downlinkBytes);
  }
  for (const [key, bytes] of more.inbounds) {
    add(into.inbounds, key, true, bytes.uplinkBytes);
    add(into.inbounds, key, false, bytes.downlinkBytes);
  }
  return into;
}

export function isEmpty(deltas: TrafficDeltas): boolean {
  return deltas.users.size === 0 && deltas.inbounds.size === 0;
}

function add(map: Map<string, Bytes>, key: string, isUplink: boolean, value: number): void {
  const entry = map.get(key) ?? { uplinkBytes: 0, downlinkBytes: 0 };
  if (isUplink) entry.uplinkBytes += value;
  else entry.downlinkBytes += value;
  map.set(key, entry);
}

type Entry = [string, number, number];

/** Deltas as the journal stores them (migration 0034): JSON arrays of [key, uplink, downlink]. */
export function encodeTraffic(deltas: TrafficDeltas): string {
  const entries = (map: Map<string, Bytes>): Entry[] =>
    [...map].map(([key, bytes]) => [key, bytes.uplinkBytes, bytes.downlinkBytes]);
  return JSON.stringify({ users: entries(deltas.users), inbounds: entries(deltas.inbounds) });
}

/** encodeTraffic's text back into deltas, added to `into` (a new object when absent). */
export function decodeTraffic(text: string, into?: TrafficDeltas): TrafficDeltas {
  const parsed = JSON.parse(text) as { users: Entry[]; inbounds: Entry[] };
  const deltas = into ?? { users: new Map(), inbounds: new Map() };
  for (const [key, up, down] of parsed.users) {
    add(deltas.users, key, true, up);
    add(deltas.users, key, false, down);
  }
  for (const [key, up, down] of parsed.inbounds) {
    add(deltas.inbounds, key, true, up);
    add(deltas.inbounds, key, false, down);
  }
  return deltas;
}
