// The IP-limit decision as a pure function: the source addresses every node saw for a user, the user's
// fair-use state and a clock in; the state after one tick of the fair-use job and what to do out
// (warn, block until, release). No I/O: the job gathers the sightings and applies the actions.
//
// One tick for one user, in order:
//  1. blocked: the block has ended (blocked_until <= now) or the limit was lifted (limit 0) → release;
//     the addresses seen up to now stop counting (counted_from = now), or the release would block
//     again at once on the sightings that caused the block; still blocked → nothing else;
//  2. count: distinct address keys seen within the window (last_seen > now - window and
//     > counted_from), allow-listed addresses not counted. A key is the IPv4 address (its /24 with
//     the carrier-NAT tolerance on), the IPv6 /64, an IPv4-mapped IPv6 address as its IPv4;
//  3. over the limit (count > limit, limit > 0): not warned in this episode → warn (warned_at = now);
//     warned at least `warnGraceMs` ago (0: the same tick) → block for the next period: the strikes
//     count up (forgotten when the last block ended more than `forgetMs` ago) and the period is
//     blockPeriodsMs[min(strikes - 1, last)];
//  4. at or under the limit again → the warning is cleared (a next excess warns first again).

export type Sighting = {
  /** A source address as the access log wrote it (IPv4, IPv6, IPv4-mapped IPv6). */
  ip: string;
  /** Epoch milliseconds of the latest connection from it. */
  lastSeenMs: number;
};

export type FairUseState = {
  /** Epoch ms until which the user is blocked; null: not blocked. */
  blockedUntilMs: number | null;
  /** Epoch ms of the warning of the current excess; null: none. */
  warnedAtMs: number | null;
  /** Blocks so far in the current run (grows the period). */
  strikes: number;
  /** Epoch ms the last block ended; null: never blocked. */
  lastReleaseMs: number | null;
  /** Sightings at or before this epoch ms do not count (the last release). */
  countedFromMs: number;
};

export const FRESH_STATE: FairUseState = Object.freeze({
  blockedUntilMs: null,
  warnedAtMs: null,
  strikes: 0,
  lastReleaseMs: null,
  countedFromMs: 0,
});

export type FairUseOptions = {
  /** The sliding window, ms. */
  windowMs: number;
  /** Count IPv4 addresses per /24 (carrier NAT hands one subscriber neighbouring addresses). */
  tolerance24: boolean;
  /** Addresses never counted. */
  allow: AllowList;
  /** Block periods, ms, by strike: the last one repeats. At least one. */
  blockPeriodsMs: readonly number[];
  /** A block after the last ended more than this long ago starts the strikes over. */
  forgetMs: number;
  /** How long a warning stands before a block; 0: warn and block in the same tick. */
  warnGraceMs: number;
};

export type FairUseAction =
  | { type: "warn"; count: number; limit: number; addresses: string[] }
  | {
      type: "block";
      count: number;
      limit: number;
      addresses: string[];
      untilMs: number;
      periodMs: number;
      strike: number;
    }
  | { type: "release"; reason: "ended" | "limit_lifted" };

export type FairUseDecision = { state: FairUseState; actions: FairUseAction[] };

const NONE: FairUseAction[] = [];

/**
 * One tick for one user. `limit` is the effective ip limit (the user's, or the default): 0 = unlimited.
 * Returns the input state object itself when nothing changed (the job writes only changed states).
 */
export function decideFairUse(
  before: FairUseState,
  limit: number,
  sightings: readonly Sighting[],
  nowMs: number,
  options: FairUseOptions,
): FairUseDecision {
  let state = before;
  let actions = NONE;
  // 1. a block ends by itself, or with the limit
  if (state.blockedUntilMs !== null) {
    if (limit > 0 && state.blockedUntilMs > nowMs) return { state, actions };
    state = { ...state, blockedUntilMs: null, warnedAtMs: null, lastReleaseMs: nowMs, countedFromMs: nowMs };
    actions = [{ type: "release", reason: limit > 0 ? "ended" : "limit_lifted" }];
    return { state, actions };
  }
  if (limit <= 0) {
    if (state.warnedAtMs === null) return { state, actions };
    return { state: { ...state, warnedAtMs: null }, actions };
  }
  // 2. count distinct keys in the window (a user has a handful: a linear scan beats a Set)
  const from = Math.max(nowMs - options.windowMs, state.countedFromMs);
  const keys: string[] = [];
  for (const sighting of sightings) {
    if (sighting.lastSeenMs <= from) continue;
    const key = addressKey(sighting.ip, options.tolerance24, options.allow);
    if (key === null) continue;
    if (!keys.includes(key)) keys.push(key);
  }
  const count = keys.length;
  // 4. under the limit: a standing warning is cleared
  if (count <= limit) {
    if (state.warnedAtMs === null) return { state, actions };
    return { state: { ...state, warnedAtMs: null }, actions };
  }
  // 3. over: warn first, block when the warning has stood its grace
  actions = [];
  let warnedAt = state.warnedAtMs;
  if (warnedAt === null) {
    warnedAt = nowMs;
    actions.push({ type: "warn", count, limit, addresses: keys });
  }
  if (nowMs - warnedAt < options.warnGraceMs) {
    return { state: warnedAt === state.warnedAtMs ? state : { ...state, warnedAtMs: warnedAt }, actions };
  }
  const forgotten = state.lastReleaseMs === null || nowMs - state.lastReleaseMs > options.forgetMs;
  const strike = (forgotten ? 0 : state.strikes) + 1;
  const periods = options.blockPeriodsMs;
  const periodMs = periods[Math.min(strike, periods.length) - 1] ?? 0;
  const untilMs = nowMs + periodMs;
  actions.push({ type: "block", count, limit, addresses: keys, untilMs, periodMs, strike });
  return { state: { ...state, blockedUntilMs: untilMs, warnedAtMs: warnedAt, strikes: strike }, actions };
}

// --- addresses -----------------------------------------------------------------------------------

/** An allow-list entry, parsed: the address as bits and the prefix length. */
type Range = { groups: number[]; bits: number } | { v4: number; bits: number };
export type AllowList = { v4: { net: number; mask: number }[]; v6: { groups: number[]; bits: number }[] };

export const EMPTY_ALLOW: AllowList = Object.freeze({ v4: [], v6: [] }) as AllowList;

/** Parses CIDRs (or plain addresses); throws naming the first entry that is not one. */
export function parseAllowList(entries: readonly string[]): AllowList {
  const out: AllowList = { v4: [], v6: [] };
  for (const entry of entries) {
    const range = parseRange(entry);
    if (range === null) throw new Error(`not an IP address or CIDR: ${entry}`);
    if ("v4" in range) {
      const mask = range.bits === 0 ? 0 : (0xffffffff << (32 - range.bits)) >>> 0;
      out.v4.push({ net: (range.v4 & mask) >>> 0, mask });
    } else {
      out.v6.push({ groups: range.groups, bits: range.bits });
    }
  }
  return out;
}

/** True when the text is an IP address or a CIDR (the settings' validation). */
export function isAddressOrCidr(text: string): boolean {
  return parseRange(text) !== null;
}

function parseRange(entry: string): Range | null {
  const slash = entry.indexOf("/");
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const bitsText = slash < 0 ? null : entry.slice(slash + 1);
  if (bitsText !== null && !/^\d{1,3}$/.test(bitsText)) return null;
  const v4 = parseIpv4(address);
  if (v4 !== null) {
    const bits = bitsText === null ? 32 : Number(bitsText);
    return bits > 32 ? null : { v4, bits };
  }
  const groups = parseIpv6Groups(address);
  if (groups === null) return null;
  const bits = bitsText === null ? 128 : Number(bitsText);
  return bits > 128 ? null : { groups, bits };
}

/**
 * The counting key of a source address: the IPv4 address (or `a.b.c.0/24`), the IPv6 /64 as
 * `xxxx:xxxx:xxxx:xxxx::/64`; null for an allow-listed or unreadable address (never counted).
 */
export function addressKey(ip: string, tolerance24: boolean, allow: AllowList): string | null {
  let text = ip;
  if (text.startsWith("[")) text = text.slice(1, text.indexOf("]") < 0 ? undefined : text.indexOf("]"));
  // IPv4-mapped IPv6 is the IPv4 address
  if (text.length > 7 && text.charCodeAt(0) === 58 && text.charCodeAt(6) === 58 && text.includes(".")) {
    if (text.slice(0, 7).toLowerCase() === "::ffff:") text = text.slice(7);
  }
  const v4 = parseIpv4(text);
  if (v4 !== null) {
    for (const range of allow.v4) if ((v4 & range.mask) >>> 0 === range.net) return null;
    if (!tolerance24) return text;
    return `${v4 >>> 24}.${(v4 >>> 16) & 255}.${(v4 >>> 8) & 255}.0/24`;
  }
  const v6 = parseIpv6Groups(text);
  if (v6 === null) return null;
  for (const range of allow.v6) if (inPrefix(v6, range.groups, range.bits)) return null;
  return `${hex4(v6[0])}:${hex4(v6[1])}:${hex4(v6[2])}:${hex4(v6[3])}::/64`;
}

const hex4 = (group: number | undefined) => (group ?? 0).toString(16);

function inPrefix(address: number[], net: number[], bits: number): boolean {
  for (let g = 0; g < 8 && g * 16 < bits; g++) {
    const left = bits - g * 16;
    const mask = left >= 16 ? 0xffff : (0xffff << (16 - left)) & 0xffff;
    if (((address[g] as number) & mask) !== ((net[g] as number) & mask)) return false;
  }
  return true;
}

/** Dotted-quad IPv4 as an unsigned 32-bit number; null when it is not one. */
export function parseIpv4(text: string): number | null {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || part > 255) return null;
      value = value * 256 + part;
      part = 0;
      digits = 0;
      dots++;
      continue;
    }
    if (c < 48 || c > 57 || digits === 3) return null;
    part = part * 10 + (c - 48);
    digits++;
  }
  if (dots !== 3 || digits === 0 || part > 255) return null;
  return value * 256 + part;
}

/** IPv6 text (with `::`, an embedded IPv4 tail, no zone) as 8 groups of 16 bits; null when it is not one. */
export function parseIpv6Groups(text: string): number[] | null {
  const length = text.length;
  if (length < 2 || length > 45) return null;
  const groups: number[] = [];
  let gap = -1; // index in groups where `::` stands
  let i = 0;
  if (text.charCodeAt(0) === 58) {
    if (text.charCodeAt(1) !== 58) return null;
    gap = 0;
    i = 2;
    if (i === length) return [0, 0, 0, 0, 0, 0, 0, 0];
  }
  while (i < length) {
    let value = 0;
    let digits = 0;
    const groupStart = i;
    while (i < length) {
      const c = text.charCodeAt(i);
      let d: number;
      if (c >= 48 && c <= 57) d = c - 48;
      else if (c >= 97 && c <= 102) d = c - 87;
      else if (c >= 65 && c <= 70) d = c - 55;
      else break;
      value = value * 16 + d;
      digits++;
      i++;
    }
    if (i < length && text.charCodeAt(i) === 46) {
      // an IPv4 tail: the rest of the text
      const v4 = parseIpv4(text.slice(groupStart));
      if (v4 === null || groups.length > 6) return null;
      groups.push(v4 >>> 16, v4 & 0xffff);
      i = length;
      break;
    }
    if (digits === 0 || digits > 4) return null;
    groups.push(value);
    if (i === length) break;
    if (text.charCodeAt(i) !== 58) return null;
    i++;
    if (i < length && text.charCodeAt(i) === 58) {
      if (gap >= 0) return null;
      gap = groups.length;
      i++;
      if (i === length) break;
    } else if (i === length) {
      return null;
    }
  }
  if (gap < 0) return groups.length === 8 ? groups : null;
  const missing = 8 - groups.length;
  if (missing < 1) return null;
  groups.splice(gap, 0, ...new Array<number>(missing).fill(0));
  return groups;
}
