// A traffic poll's counters read straight from QueryStatsResponse bytes. At a million users one
// fleet-wide poll is 2,000,000 Stat messages: decoding them into message objects with bigint values,
// matching each name with a regular expression, summing them in a Map per email and turning that into
// JSON cost the panel 1.6–2.6 s of CPU per poll (docs/benchmarks/traffic.md). This reads each Stat's
// name and value in place, sums a user's uplink and downlink in a hash table keyed by the email's byte
// range in the answer, and writes the users as JSON array items `["email",uplink,downlink]` (what the
// traffic journal stores, features/traffic/traffic.ts) straight from those bytes: no object, string
// or bigint per counter. It keeps parseTraffic's rules exactly (`(user|inbound)>>>NAME>>>traffic>>>
// (uplink|downlink)`, values ≤ 0 skipped, hidden inbound tags skipped); a name that is not plain
// ASCII takes that regular expression itself, so the two cannot disagree. Malformed bytes throw.
// Wire format as in stats-scan.ts: QueryStatsResponse { repeated Stat stat = 1 }, Stat { string name = 1;
// int64 value = 2 }, the same numbers in V2Ray 4.x and every Xray layout.
import type { CoreTraffic, TrafficPair } from "./core-types.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });
const COUNTER = /^(inbound|user)>>>(.+)>>>traffic>>>(uplink|downlink)$/;

const USER = ascii("user>>>");
const INBOUND = ascii("inbound>>>");
const UPLINK = ascii(">>>traffic>>>uplink");
const DOWNLINK = ascii(">>>traffic>>>downlink");

function ascii(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

export class TrafficScanError extends Error {
  constructor(detail: string, at: number) {
    super(`malformed QueryStats answer at byte ${at}: ${detail}`);
    this.name = "TrafficScanError";
  }
}

/**
 * Every user and inbound traffic counter of one QueryStatsResponse (bytes as received), summed per
 * email or tag. Zero and negative values and other counters are skipped, and so are inbounds whose
 * tag is in `hiddenTags` (the API's own). Throws TrafficScanError on a truncated or malformed answer,
 * and on a name that is not UTF-8.
 */
export function scanTraffic(bytes: Uint8Array, hiddenTags: readonly string[] = []): CoreTraffic {
  const users = new EmailTable(bytes);
  const inbounds = new Map<string, TrafficPair>();
  /** Users whose email is not plain ASCII (never ours): summed by string. */
  const unusual = new Map<string, TrafficPair>();
  const n = bytes.length;
  let pos = 0;
  while (pos < n) {
    // Tags and lengths below 128 are one byte (every Stat's tag, nearly every length): read inline.
    const tagStart = pos;
    let tag = bytes[pos] as number;
    if (tag < 0x80) pos++;
    else {
      tag = varintAt(bytes, pos, n);
      pos = after;
    }
    if (tag !== 0x0a) {
      if (tag >>> 3 === 1) throw new TrafficScanError("a stat is not length-delimited", tagStart);
      pos = skipField(bytes, tagStart, n);
      continue;
    }
    if (pos >= n) throw new TrafficScanError("truncated varint", pos);
    let length = bytes[pos] as number;
    if (length < 0x80) pos++;
    else {
      length = varintAt(bytes, pos, n);
      pos = after;
    }
    const end = pos + length;
    if (end > n) throw new TrafficScanError("a stat overruns the answer", pos);
    let nameStart = -1;
    let nameEnd = -1;
    let value = 0;
    while (pos < end) {
      const inner = bytes[pos] as number;
      if (inner === 0x0a) {
        if (nameStart !== -1) checkUtf8(bytes, nameStart, nameEnd); // the last name wins; each must be text
        if (pos + 1 >= end) throw new TrafficScanError("truncated varint", pos + 1);
        let nameLength = bytes[pos + 1] as number;
        if (nameLength < 0x80) pos += 2;
        else {
          nameLength = varintAt(bytes, pos + 1, end);
          pos = after;
        }
        nameStart = pos;
        nameEnd = pos + nameLength;
        if (nameEnd > end) throw new TrafficScanError("a name overruns its stat", pos);
        pos = nameEnd;
      } else if (inner === 0x10) {
        value = int64At(bytes, pos + 1, end);
        pos = after;
      } else {
        const field = varintAt(bytes, pos, end);
        if (field >>> 3 === 1 || field >>> 3 === 2) {
          throw new TrafficScanError("a stat's name or value has the wrong wire type", pos);
        }
        pos = skipField(bytes, pos, end);
      }
    }
    if (nameStart === -1) continue;
    const counter = value > 0 ? classify(bytes, nameStart, nameEnd) : undefined;
    // A user's counter with a plain-ASCII name (all of ours) goes straight into the table.
    if (counter?.isUser && users.add(counter.keyStart, counter.keyEnd, counter.isUplink, value)) continue;
    // Everything else: the name must be UTF-8 (the full decoder refuses the answer otherwise).
    checkUtf8(bytes, nameStart, nameEnd);
    if (counter === undefined) continue;
    const key = isPlain(bytes, counter.keyStart, counter.keyEnd)
      ? latin1(bytes, counter.keyStart, counter.keyEnd)
      : unusualName(bytes, nameStart, nameEnd, counter.isUser);
    if (key === undefined || (!counter.isUser && hiddenTags.includes(key))) continue;
    addPair(counter.isUser ? unusual : inbounds, key, counter.isUplink, value);
  }
  const items = [users.json(), ...[...unusual].map(([key, pair]) => item(key, pair))].filter((t) => t !== "");
  return { users: { json: items.join(","), count: users.size + unusual.size }, inbounds };
}

/** No counters. */
export function emptyTraffic(): CoreTraffic {
  return { users: { json: "", count: 0 }, inbounds: new Map() };
}

/**
 * Two polls' (or two answers') counters as one: the users' items side by side (an email in both
 * appears twice; readers add them up), the inbounds added.
 */
export function joinTraffic(a: CoreTraffic, b: CoreTraffic): CoreTraffic {
  const json =
    a.users.json === ""
      ? b.users.json
      : b.users.json === ""
        ? a.users.json
        : `${a.users.json},${b.users.json}`;
  const inbounds = new Map<string, TrafficPair>();
  for (const map of [a.inbounds, b.inbounds]) {
    for (const [tag, pair] of map) {
      addPair(inbounds, tag, true, pair.uplinkBytes);
      addPair(inbounds, tag, false, pair.downlinkBytes);
    }
  }
  return { users: { json, count: a.users.count + b.users.count }, inbounds };
}

/** JSON array item `["key",uplink,downlink]`, the form EmailTable.json() writes. */
function item(key: string, pair: TrafficPair): string {
  return JSON.stringify([key, pair.uplinkBytes, pair.downlinkBytes]);
}

function addPair(map: Map<string, TrafficPair>, key: string, isUplink: boolean, value: number): void {
  let pair = map.get(key);
  if (pair === undefined) {
    pair = { uplinkBytes: 0, downlinkBytes: 0 };
    map.set(key, pair);
  }
  if (isUplink) pair.uplinkBytes += value;
  else pair.downlinkBytes += value;
}

function latin1(bytes: Uint8Array, start: number, end: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString("latin1");
}

type Counter = { isUser: boolean; isUplink: boolean; keyStart: number; keyEnd: number };
/** Reused for every counter: one answer holds tens of thousands. */
const found: Counter = { isUser: false, isUplink: false, keyStart: 0, keyEnd: 0 };

/** Whether a name (its byte range) is a traffic counter, and where its email or tag is. */
function classify(bytes: Uint8Array, start: number, end: number): Counter | undefined {
  if (startsWith(bytes, start, end, USER)) {
    found.isUser = true;
    found.keyStart = start + USER.length;
  } else if (startsWith(bytes, start, end, INBOUND)) {
    found.isUser = false;
    found.keyStart = start + INBOUND.length;
  } else {
    return undefined;
  }
  if (endsWith(bytes, found.keyStart, end, UPLINK)) {
    found.isUplink = true;
    found.keyEnd = end - UPLINK.length;
  } else if (endsWith(bytes, found.keyStart, end, DOWNLINK)) {
    found.isUplink = false;
    found.keyEnd = end - DOWNLINK.length;
  } else {
    return undefined;
  }
  if (found.keyEnd <= found.keyStart) return undefined;
  return found;
}

/**
 * Users' uplink and downlink summed per email, the email being a byte range of the answer: an
 * open-addressing table over typed arrays (FNV-1a of the bytes), so a million users are a few arrays,
 * not a million entries, objects and strings for the garbage collector.
 */
class EmailTable {
  readonly #bytes: Uint8Array;
  readonly #slots: Int32Array;
  readonly #mask: number;
  readonly #starts: Int32Array;
  readonly #ends: Int32Array;
  readonly #up: Float64Array;
  readonly #down: Float64Array;
  size = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    // The shortest user counter takes 33 bytes on the wire, so the answer holds at most this many.
    const rows = Math.floor(bytes.length / 33) + 1;
    let capacity = 16;
    while (capacity < rows * 2) capacity *= 2;
    this.#slots = new Int32Array(capacity);
    this.#mask = capacity - 1;
    this.#starts = new Int32Array(rows);
    this.#ends = new Int32Array(rows);
    this.#up = new Float64Array(rows);
    this.#down = new Float64Array(rows);
  }

  /** Adds a counter of the email at bytes [start, end); false (nothing added) if it is not plain (isPlain). */
  add(start: number, end: number, isUplink: boolean, value: number): boolean {
    const bytes = this.#bytes;
    const slots = this.#slots;
    const mask = this.#mask;
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) {
      const b = bytes[i] as number;
      if (b < 0x20 || b > 0x7e || b === 0x22 || b === 0x5c) return false;
      hash = Math.imul(hash ^ b, 0x01000193);
    }
    let slot = hash & mask;
    for (;;) {
      const taken = slots[slot] as number;
      if (taken === 0) {
        const row = this.size++;
        slots[slot] = row + 1;
        this.#starts[row] = start;
        this.#ends[row] = end;
        if (isUplink) this.#up[row] = value;
        else this.#down[row] = value;
        return true;
      }
      const row = taken - 1;
      if (this.#sameKey(row, start, end)) {
        if (isUplink) this.#up[row] = (this.#up[row] as number) + value;
        else this.#down[row] = (this.#down[row] as number) + value;
        return true;
      }
      slot = (slot + 1) & mask;
    }
  }

  #sameKey(row: number, start: number, end: number): boolean {
    const other = this.#starts[row] as number;
    if ((this.#ends[row] as number) - other !== end - start) return false;
    const bytes = this.#bytes;
    for (let i = 0; i < end - start; i++) if (bytes[other + i] !== bytes[start + i]) return false;
    return true;
  }

  /** The users as JSON array items, comma-separated, in first-seen order; plain keys need no escapes. */
  json(): string {
    let size = 0;
    for (let row = 0; row < this.size; row++) {
      size += (this.#ends[row] as number) - (this.#starts[row] as number) + 2 * MAX_DIGITS + 8;
    }
    const out = Buffer.allocUnsafe(size);
    const bytes = this.#bytes;
    const starts = this.#starts;
    const ends = this.#ends;
    const up = this.#up;
    const down = this.#down;
    let at = 0;
    for (let row = 0; row < this.size; row++) {
      if (row > 0) out[at++] = 0x2c; // ,
      out[at++] = 0x5b; // [
      out[at++] = 0x22; // "
      const end = ends[row] as number;
      for (let i = starts[row] as number; i < end; i++) out[at++] = bytes[i] as number;
      out[at++] = 0x22;
      out[at++] = 0x2c;
      at = writeNumber(out, at, up[row] as number);
      out[at++] = 0x2c;
      at = writeNumber(out, at, down[row] as number);
      out[at++] = 0x5d; // ]
    }
    return out.toString("latin1", 0, at);
  }
}

/** The longest String(n) of a non-negative double ("1.7976931348623157e+308" is 23). */
const MAX_DIGITS = 24;

/** n as JSON writes it: digits for a safe integer, else String(n) (ASCII either way). */
function writeNumber(out: Uint8Array, at: number, n: number): number {
  if (!Number.isSafeInteger(n)) {
    const text = String(n);
    for (let i = 0; i < text.length; i++) out[at++] = text.charCodeAt(i);
    return at;
  }
  if (n <= 0x7fffffff) {
    // Small integer arithmetic: nearly every per-poll counter is below 2^31.
    let digits = 1;
    for (let rest = n | 0; rest >= 10; rest = (rest / 10) | 0) digits++;
    let rest = n | 0;
    for (let i = digits - 1; i >= 0; i--) {
      out[at + i] = 0x30 + (rest % 10);
      rest = (rest / 10) | 0;
    }
    return at + digits;
  }
  let digits = 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  let rest = n;
  for (let i = digits - 1; i >= 0; i--) {
    out[at + i] = 0x30 + (rest % 10);
    rest = Math.floor(rest / 10);
  }
  return at + digits;
}

/** Throws unless the bytes are UTF-8 (ASCII checked in place; anything else by the decoder). */
function checkUtf8(bytes: Uint8Array, start: number, end: number): void {
  for (let i = start; i < end; i++) {
    if ((bytes[i] as number) > 0x7f) {
      unusualName(bytes, start, end, true);
      return;
    }
  }
}

/** A name with bytes outside printable ASCII: decoded as UTF-8 and matched by the rule itself. */
function unusualName(bytes: Uint8Array, start: number, end: number, isUser: boolean): string | undefined {
  let name: string;
  try {
    name = utf8.decode(bytes.subarray(start, end));
  } catch {
    throw new TrafficScanError("a counter's name is not UTF-8", start);
  }
  const match = COUNTER.exec(name);
  if (match === null || (match[1] === "user") !== isUser) return undefined;
  return match[2];
}

/**
 * Printable ASCII that JSON writes as it is: no line breaks (the rule's `.` does not cross them), no
 * multi-byte text, no `"` or `\\`.
 */
function isPlain(bytes: Uint8Array, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const b = bytes[i] as number;
    if (b < 0x20 || b > 0x7e || b === 0x22 || b === 0x5c) return false;
  }
  return true;
}

function startsWith(bytes: Uint8Array, start: number, end: number, prefix: Uint8Array): boolean {
  if (end - start < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[start + i] !== prefix[i]) return false;
  return true;
}

function endsWith(bytes: Uint8Array, start: number, end: number, suffix: Uint8Array): boolean {
  if (end - start < suffix.length) return false;
  const from = end - suffix.length;
  for (let i = 0; i < suffix.length; i++) if (bytes[from + i] !== suffix[i]) return false;
  return true;
}

/** Where the last varint read ended (no tuple per read: this runs millions of times a poll). */
let after = 0;

/** A tag or length varint below 2^31; sets `after`. */
function varintAt(bytes: Uint8Array, start: number, end: number): number {
  let result = 0;
  let pos = start;
  for (let shift = 0; shift < 35; shift += 7) {
    if (pos >= end) throw new TrafficScanError("truncated varint", pos);
    const b = bytes[pos++] as number;
    result += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) {
      if (result > 0x7fffffff) throw new TrafficScanError("length out of range", start);
      after = pos;
      return result;
    }
  }
  throw new TrafficScanError("varint too long", start);
}

/**
 * An int64 varint as a number (negative ones are; the caller skips them); sets `after`. Up to 7
 * bytes (2^49) in number arithmetic, exact; longer ones as int64 (bits past 64 dropped, as protobuf
 * decoders do), then Number() as the generic path rounded them.
 */
function int64At(bytes: Uint8Array, start: number, end: number): number {
  let result = 0;
  let scale = 1;
  let pos = start;
  for (let i = 0; i < 7; i++) {
    if (pos >= end) throw new TrafficScanError("truncated varint", pos);
    const b = bytes[pos++] as number;
    result += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) {
      after = pos;
      return result;
    }
    scale *= 128;
  }
  let big = 0n;
  pos = start;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) throw new TrafficScanError("truncated varint", pos);
    const b = bytes[pos++] as number;
    big |= BigInt(b & 0x7f) << BigInt(7 * i);
    if ((b & 0x80) === 0) {
      after = pos;
      return Number(BigInt.asIntN(64, big));
    }
  }
  throw new TrafficScanError("varint too long", start);
}

/** Skips one field (a tag and what follows it); returns the position after it. */
function skipField(bytes: Uint8Array, start: number, end: number): number {
  const tag = varintAt(bytes, start, end);
  let pos = after;
  const wireType = tag & 7;
  if (tag >>> 3 === 0) throw new TrafficScanError("field number 0", start);
  if (wireType === 0) {
    for (let i = 0; ; i++) {
      if (pos >= end) throw new TrafficScanError("truncated varint", pos);
      if (i === 10) throw new TrafficScanError("varint too long", pos);
      if (((bytes[pos++] as number) & 0x80) === 0) break;
    }
  } else if (wireType === 1) pos += 8;
  else if (wireType === 5) pos += 4;
  else if (wireType === 2) {
    const length = varintAt(bytes, pos, end);
    pos = after + length;
  } else throw new TrafficScanError(`unsupported wire type ${wireType}`, start);
  if (pos > end) throw new TrafficScanError("truncated field", start);
  return pos;
}
