// Turns the core's counters, read with reset, into deltas to add to the database's totals. Pure.
// A user's counters are keyed by their email on the core (the proxy_user_id), shared by all of that
// user's grants on one server; inbound counters by tag. Zero deltas are dropped: nothing to write.
// A direct core's poll arrives already summed (CoreClient.queryTraffic, cores/traffic-scan.ts: the
// users as the journal's JSON items); an agent's batches come as [name, value] pairs (parseTraffic).
import type { CoreStat, CoreTraffic } from "../../cores/core-types.ts";

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

function add(map: Map<string, Bytes>, key: string, isUplink: boolean, value: number): void {
  const entry = map.get(key) ?? { uplinkBytes: 0, downlinkBytes: 0 };
  if (isUplink) entry.uplinkBytes += value;
  else entry.downlinkBytes += value;
  map.set(key, entry);
}

type Entry = [string, number, number];

const entries = (map: ReadonlyMap<string, Bytes>): Entry[] =>
  [...map].map(([key, bytes]) => [key, bytes.uplinkBytes, bytes.downlinkBytes]);

/**
 * A poll as the journal stores it (migration 0034): `{"users":[…],"inbounds":[…]}`, each a JSON
 * array of [key, uplink, downlink] (a key may repeat: decodeTraffic adds them up). The users' items
 * are the scan's own text, put in as they are: at a million users no array or object per user.
 */
export function encodeTraffic(polled: CoreTraffic): string {
  return `{"users":[${polled.users.json}],"inbounds":${JSON.stringify(entries(polled.inbounds))}}`;
}

export function isEmpty(polled: CoreTraffic): boolean {
  return polled.users.count === 0 && polled.inbounds.size === 0;
}

/** Deltas in a poll's form (what an agent's batch or a test has as maps). */
export function polledOf(deltas: TrafficDeltas): CoreTraffic {
  const json = JSON.stringify(entries(deltas.users)).slice(1, -1);
  return { users: { json, count: deltas.users.size }, inbounds: new Map(deltas.inbounds) };
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
