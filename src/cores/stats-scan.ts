// The non-zero counters of a QueryStatsResponse, read straight from its bytes. The node agent reads
// every user's counters with reset each traffic interval; with 10,000 users that answer holds 20,000
// stats, nearly all zero while the host is quiet (proto3 leaves a zero value out). Decoding it into
// messages made ~20,000 objects, names and bigints every read, garbage that grew the agent's heap;
// this reads the lengths and values in place and makes a string only for a counter that moved.
// Same field numbers in V2Ray 4.x and every Xray layout: QueryStatsResponse { repeated Stat stat = 1 },
// Stat { string name = 1; int64 value = 2 }.

const LENGTH_DELIMITED = 2;
const VARINT = 0;
const FIXED64 = 1;
const FIXED32 = 5;

const utf8 = new TextDecoder("utf-8", { fatal: true });

type Cursor = { pos: number };

/** A varint as a bigint (int64 fields are up to 10 bytes); throws on a truncated one. */
function varint(bytes: Uint8Array, at: Cursor): bigint {
  let result = 0n;
  let shift = 0n;
  for (let i = 0; i < 10; i++) {
    if (at.pos >= bytes.length) throw new Error("truncated varint");
    const byte = bytes[at.pos++] as number;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return result;
    shift += 7n;
  }
  throw new Error("varint too long");
}

/** A small varint (tags, lengths) as a number. */
function smallVarint(bytes: Uint8Array, at: Cursor): number {
  let result = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (at.pos >= bytes.length) throw new Error("truncated varint");
    const byte = bytes[at.pos++] as number;
    result += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) return result;
  }
  throw new Error("varint too long");
}

function skip(bytes: Uint8Array, at: Cursor, wireType: number): void {
  if (wireType === VARINT) varint(bytes, at);
  else if (wireType === FIXED64) at.pos += 8;
  else if (wireType === FIXED32) at.pos += 4;
  else if (wireType === LENGTH_DELIMITED) {
    const length = smallVarint(bytes, at);
    at.pos += length;
  } else throw new Error(`unsupported wire type ${wireType}`);
  if (at.pos > bytes.length) throw new Error("truncated field");
}

/** [name, value in decimal] of every stat whose value is not zero, in the answer's order. */
export function nonZeroStats(bytes: Uint8Array): [string, string][] {
  const out: [string, string][] = [];
  const at: Cursor = { pos: 0 };
  while (at.pos < bytes.length) {
    const tag = smallVarint(bytes, at);
    if (tag >>> 3 !== 1 || (tag & 7) !== LENGTH_DELIMITED) {
      skip(bytes, at, tag & 7);
      continue;
    }
    const length = smallVarint(bytes, at);
    const end = at.pos + length;
    if (end > bytes.length) throw new Error("truncated stat");
    let nameStart = -1;
    let nameEnd = -1;
    let value = 0n;
    while (at.pos < end) {
      const inner = smallVarint(bytes, at);
      const field = inner >>> 3;
      if (field === 1 && (inner & 7) === LENGTH_DELIMITED) {
        const nameLength = smallVarint(bytes, at);
        nameStart = at.pos;
        nameEnd = at.pos + nameLength;
        if (nameEnd > end) throw new Error("stat overruns its length");
        at.pos = nameEnd;
      } else if (field === 2 && (inner & 7) === VARINT) value = BigInt.asIntN(64, varint(bytes, at));
      else skip(bytes, at, inner & 7);
    }
    if (at.pos !== end) throw new Error("stat overruns its length");
    if (value === 0n) continue;
    const name = nameStart === -1 ? "" : utf8.decode(bytes.subarray(nameStart, nameEnd));
    out.push([name, value.toString()]);
  }
  return out;
}
