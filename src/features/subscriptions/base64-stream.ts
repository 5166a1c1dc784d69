// Base64 written into a byte buffer piece by piece, where most pieces are known in advance. A
// subscription body is base64 of text that is the same for every user of a layout except for a few
// secrets; base64 maps each 3 bytes to 4 characters, so the groups that lie wholly inside constant
// text are encoded once (per phase: where the text starts relative to a group) and copied, and only
// the groups that touch a secret are encoded per request, in JavaScript: for a few dozen bytes the
// call into Buffer#toString costs more than the encoding. Constant text can also be left out of the
// buffer: the stream then notes where it goes, and text() joins the encoded pieces and the constant
// strings into one string (a rope) without copying the constants, which the socket write copies once.

export const STANDARD = Buffer.from(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
  "latin1",
);
export const URL_SAFE = Buffer.from(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
  "latin1",
);
const PAD = 0x3d; // "="

/**
 * Constant text, encoded ahead for each phase. `lead` is how many of its bytes complete the group
 * that the stream has open when the text begins (0, 1 or 2); the groups after them are `chunks[lead]`
 * (base64, so one byte a character), the bytes left over (0-2) open the next group.
 */
export type ConstantText = {
  readonly bytes: Uint8Array;
  readonly chunks: readonly [string, string, string];
};

export function constantText(text: string | Uint8Array, alphabet: Uint8Array = STANDARD): ConstantText {
  const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  const chunk = (lead: number): string => {
    if (bytes.length <= lead) return "";
    const whole = bytes.length - lead - ((bytes.length - lead) % 3);
    const out = Buffer.alloc((whole / 3) * 4);
    encodeGroups(bytes, lead, lead + whole, out, 0, alphabet);
    return out.toString("latin1");
  };
  return { bytes, chunks: [chunk(0), chunk(1), chunk(2)] };
}

/** Two characters per 12 bits, as one little-endian 16-bit word (so a group is one 32-bit store). */
function pairsOf(alphabet: Uint8Array): Uint16Array {
  const pairs = new Uint16Array(4096);
  for (let x = 0; x < 4096; x++)
    pairs[x] = (alphabet[x >>> 6] as number) | ((alphabet[x & 63] as number) << 8);
  return pairs;
}
const IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

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

function alignedCapacity(bytes: number): number {
  return Math.ceil(bytes / 8) * 8;
}

/**
 * One base64 text being written into `out`. Bytes are pushed as constant text (copied in encoded
 * form) or as raw bytes written into `raw` (encoded here); up to two bytes wait for their group.
 */
export class Base64Stream {
  out: Buffer;
  /** The same bytes as 32-bit words: a group written at a multiple of 4 is one store. */
  #out32: Uint32Array;
  at = 0;
  /** Scratch for raw bytes: the open group's bytes first (0-2), then what the caller writes. */
  raw: Uint8Array;
  open = 0;
  readonly #pairs: Uint16Array;
  /** Constant strings left out of `out` (pushConstantText), and where in `out` each goes. */
  readonly #texts: string[] = [];
  readonly #marks: number[] = [];
  #textCount = 0;

  constructor(
    private readonly alphabet: Uint8Array,
    capacity: number,
  ) {
    this.out = Buffer.allocUnsafeSlow(alignedCapacity(capacity));
    this.#out32 = new Uint32Array(this.out.buffer, this.out.byteOffset, this.out.length / 4);
    this.raw = Buffer.allocUnsafeSlow(capacity);
    this.#pairs = pairsOf(alphabet);
  }

  /** Encodes raw[from, to) (whole groups) at the output's end. */
  #encode(from: number, to: number): void {
    if ((this.at & 3) !== 0 || !IS_LITTLE_ENDIAN) {
      this.at = encodeGroups(this.raw, from, to, this.out, this.at, this.alphabet);
      return;
    }
    const { raw } = this;
    const pairs = this.#pairs;
    const out32 = this.#out32;
    let word = this.at >>> 2;
    for (let i = from; i < to; i += 3) {
      const v = ((raw[i] as number) << 16) | ((raw[i + 1] as number) << 8) | (raw[i + 2] as number);
      out32[word++] = (pairs[v >>> 12] as number) | ((pairs[v & 4095] as number) << 16);
    }
    this.at = word << 2;
  }

  reset(): void {
    this.at = 0;
    this.open = 0;
    this.#textCount = 0;
  }

  /** Room for `bytes` more output bytes (grows the buffer; never shrinks). */
  reserve(bytes: number): void {
    if (this.at + bytes <= this.out.length) return;
    const out = Buffer.allocUnsafeSlow(alignedCapacity(Math.max(2 * this.out.length, this.at + bytes)));
    out.set(this.out.subarray(0, this.at));
    this.out = out;
    this.#out32 = new Uint32Array(out.buffer, out.byteOffset, out.length / 4);
  }

  /** Room for `bytes` raw bytes after the open group's. */
  reserveRaw(bytes: number): void {
    if (this.open + bytes <= this.raw.length) return;
    const raw = Buffer.allocUnsafeSlow(Math.max(2 * this.raw.length, this.open + bytes));
    raw.set(this.raw.subarray(0, this.open));
    this.raw = raw;
  }

  /** Constant text, copied into `out`. */
  pushConstant(text: ConstantText): void {
    const lead = this.#leadOf(text);
    if (lead < 0) return;
    const chunk = text.chunks[lead as 0 | 1 | 2];
    this.reserve(chunk.length);
    this.at += this.out.write(chunk, this.at, "latin1");
    this.#keepRest(text, lead);
  }

  /** Constant text, left out of `out`: text() puts it in (no copy until the string is written). */
  pushConstantText(text: ConstantText): void {
    const lead = this.#leadOf(text);
    if (lead < 0) return;
    const chunk = text.chunks[lead as 0 | 1 | 2];
    if (chunk.length > 0) {
      this.#texts[this.#textCount] = chunk;
      this.#marks[this.#textCount++] = this.at;
    }
    this.#keepRest(text, lead);
  }

  /**
   * How many of the text's bytes complete the open group (encoded here), or -1 when the text is too
   * short to complete it (its bytes then wait in the group).
   */
  #leadOf(text: ConstantText): number {
    const { bytes } = text;
    if (this.open === 0) return 0;
    const lead = 3 - this.open;
    if (bytes.length < lead) {
      for (let i = 0; i < bytes.length; i++) this.raw[this.open++] = bytes[i] as number;
      return -1;
    }
    for (let i = 0; i < lead; i++) this.raw[this.open + i] = bytes[i] as number;
    this.reserve(4);
    this.#encode(0, 3);
    return lead;
  }

  /** The text's last bytes that do not fill a group open the next one. */
  #keepRest(text: ConstantText, lead: number): void {
    const { bytes } = text;
    const rest = (bytes.length - lead) % 3;
    for (let i = 0; i < rest; i++) this.raw[i] = bytes[bytes.length - rest + i] as number;
    this.open = rest;
  }

  /**
   * The output up to `to` (a position in `out`) as one string, with the constant text noted up to
   * there (at `to` included) put in its place. `written`: out[0, …) as a string, when the caller has it.
   */
  text(to: number, written?: string): string {
    const all = written ?? this.out.toString("latin1", 0, to);
    let result = "";
    let position = 0;
    for (let i = 0; i < this.#textCount; i++) {
      const mark = this.#marks[i] as number;
      if (mark > to) break; // noted in order
      result += all.slice(position, mark) + (this.#texts[i] as string);
      position = mark;
    }
    return result + all.slice(position, to);
  }

  /** Encodes raw[0, end): the open group's bytes and what the caller wrote after them (at `open`). */
  pushRaw(end: number): void {
    const whole = end - (end % 3);
    this.reserve((whole / 3) * 4 + 4);
    this.#encode(0, whole);
    for (let i = whole; i < end; i++) this.raw[i - whole] = this.raw[i] as number;
    this.open = end - whole;
  }

  /** Appends bytes to the output as they are (no encoding; no group may be open). */
  appendBytes(src: Uint8Array, from: number, to: number): void {
    this.reserve(to - from);
    const { out } = this;
    let o = this.at;
    for (let i = from; i < to; i++) out[o++] = src[i] as number;
    this.at = o;
  }

  /** Encodes the open group (with `=` padding when asked); returns the length written. */
  finish(pad: boolean): number {
    this.reserve(4);
    const { raw, out, alphabet } = this;
    if (this.open === 1) {
      const v = (raw[0] as number) << 16;
      out[this.at++] = alphabet[v >>> 18] as number;
      out[this.at++] = alphabet[(v >>> 12) & 63] as number;
      if (pad) out[this.at++] = PAD;
      if (pad) out[this.at++] = PAD;
    } else if (this.open === 2) {
      const v = ((raw[0] as number) << 16) | ((raw[1] as number) << 8);
      out[this.at++] = alphabet[v >>> 18] as number;
      out[this.at++] = alphabet[(v >>> 12) & 63] as number;
      out[this.at++] = alphabet[(v >>> 6) & 63] as number;
      if (pad) out[this.at++] = PAD;
    }
    this.open = 0;
    return this.at;
  }
}
