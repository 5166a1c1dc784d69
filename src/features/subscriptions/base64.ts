// The bytes of an answer: base64 of a few dozen bytes in JavaScript (encodeGroups: what the secret
// writers need for links whose secret is itself base64 of text around the credential, VMess and
// Shadowsocks before 2022; for that little a call into Buffer#toString costs more than the
// encoding), the reused buffer an answer's text is written into (TextBuffer), and Buffer's native
// slices, through which the whole body is encoded in one call.

export const STANDARD = Buffer.from(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
  "latin1",
);
export const URL_SAFE = Buffer.from(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
  "latin1",
);

/** Encodes src[from, to) (a multiple of 3 bytes) into out at `at`; returns the end. */
export function encodeGroups(
  src: Uint8Array,
  from: number,
  to: number,
  out: Uint8Array,
  at: number,
  alphabet: Uint8Array,
): number {
  let o = at;
  for (let i = from; i < to; i += 3) {
    const v = ((src[i] as number) << 16) | ((src[i + 1] as number) << 8) | (src[i + 2] as number);
    out[o] = alphabet[v >>> 18] as number;
    out[o + 1] = alphabet[(v >>> 12) & 63] as number;
    out[o + 2] = alphabet[(v >>> 6) & 63] as number;
    out[o + 3] = alphabet[v & 63] as number;
    o += 4;
  }
  return o;
}

/**
 * Encodes src[from, end) to its end into out at `at`: the last group padded with `=` when `pad`
 * (standard base64; Node's base64url never pads). Returns the end.
 */
export function encodeFinal(
  src: Uint8Array,
  from: number,
  end: number,
  out: Uint8Array,
  at: number,
  alphabet: Uint8Array,
  pad: boolean,
): number {
  const whole = end - ((end - from) % 3);
  let o = encodeGroups(src, from, whole, out, at, alphabet);
  const rest = end - whole;
  if (rest === 0) return o;
  const v = ((src[whole] as number) << 16) | (rest === 2 ? (src[whole + 1] as number) << 8 : 0);
  out[o++] = alphabet[v >>> 18] as number;
  out[o++] = alphabet[(v >>> 12) & 63] as number;
  if (rest === 2) out[o++] = alphabet[(v >>> 6) & 63] as number;
  else if (pad) out[o++] = 0x3d;
  if (pad) out[o++] = 0x3d;
  return o;
}

/**
 * Bytes written piece by piece into one buffer that is reused from answer to answer (answers are
 * synchronous: each reads what it wrote before the next one starts) and grows as needed.
 */
export class TextBuffer {
  bytes: Buffer;
  end = 0;

  constructor(capacity: number) {
    this.bytes = Buffer.allocUnsafeSlow(capacity);
  }

  /** Room for `more` bytes after `end` (what is before `end` is kept). */
  reserve(more: number): void {
    if (this.end + more <= this.bytes.length) return;
    const bytes = Buffer.allocUnsafeSlow(Math.max(2 * this.bytes.length, this.end + more));
    this.bytes.copy(bytes, 0, 0, this.end);
    this.bytes = bytes;
  }

  append(src: Uint8Array): void {
    this.reserve(src.length);
    this.bytes.set(src, this.end);
    this.end += src.length;
  }
}

/** bytes[start, end) as a string of one character per byte. */
export function latin1Of(bytes: Buffer, start: number, end: number): string {
  return bytes.toString("latin1", start, end);
}

/**
 * bytes[start, end) in standard base64 with padding. (Buffer's own `base64Slice` and `latin1Slice`,
 * undocumented, saved nothing measurable over toString() on Node 20 or 24: docs/benchmarks/sub.md,
 * "What each Node.js internal saves".)
 */
export function base64Of(bytes: Buffer, start: number, end: number): string {
  return bytes.toString("base64", start, end);
}
