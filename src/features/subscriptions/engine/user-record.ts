// One user as the subscription index keeps them: the values a subscription is made of and nothing
// it can be rendered from: id, name, the credential of each grant in layout order, traffic totals,
// and a tag of the name and credentials for the ETag. Records live in pages outside the JS heap
// (record-store.ts); each starts at a multiple of 8 bytes so the header is read through typed-array
// views. Credentials are stored by kind: a lowercase uuid in 16 bytes, other text as UTF-8 with the
// character class the link writers need (secret-writers.ts).
import { createHash } from "node:crypto";

/** Lowercase canonical uuid: 16 bytes. */
export const KIND_UUID = 1;
/** Non-empty, only characters no URI component escapes: A-Z a-z 0-9 . _ ~ - */
export const KIND_URL_SAFE = 2;
/** Non-empty standard base64 with padding (length a multiple of 4). */
export const KIND_BASE64 = 3;
/** Anything else (empty included). */
export const KIND_OTHER = 4;

export const FLAG_LIVE = 1;
/** Content-Disposition is `attachment; filename="<name>"`: nothing stored for it. */
export const FLAG_PLAIN_DISPOSITION = 2;
/** The subscription was revoked: the record answers its token, never its user id. */
export const FLAG_NOT_BY_ID = 4;
/** The user has their own announcement (users.announce), stored after the credentials. */
export const FLAG_ANNOUNCE = 8;
/** The user's devices are checked at fetch time (a device limit above 0): the fast path leaves them to the route. */
export const FLAG_DEVICES = 16;

// Header offsets (bytes): length u32 | flags u8, status u8, grant count u16 | loaded at u32 |
// layout slot u32 | upload f64 | download f64 | total f64 | expire f64 | user id 16 | sub token 16 |
// tag 14 | name length u16 | fetch noted at u32 | fetch agent u32 | name… (the two keys 4-aligned:
// the record store's tables read them as words)
export const LENGTH = 0;
export const FLAGS = 4;
/** The user's status (STATUS_CODES index; 0: not stored), for the {STATUS} variable. */
export const STATUS = 5;
export const GRANTS = 6;
export const LOADED_AT = 8;
export const LAYOUT = 12;
export const UPLOAD = 16;
export const DOWNLOAD = 24;
/** Subscription-Userinfo's total: the data limit in bytes, 0 = unlimited. */
export const TOTAL = 32;
/** Subscription-Userinfo's expire: unix seconds, 0 = never. */
export const EXPIRE = 40;
export const KEY = 48;
/** The user's sub_token (32 hex characters) as 16 bytes; zeros when the record was stored without one. */
export const TOKEN = 64;
export const TAG = 80;
export const TAG_LENGTH = 14;
export const NAME_LENGTH = 94;
/**
 * When the last /sub fetch of this record was noted (unix seconds; 0: none since it was stored) and a
 * hash of its User-Agent: fetches of one client within FETCH_RESOLUTION_S are noted once (fetch-log.ts).
 */
export const FETCH_NOTED_AT = 96;
export const FETCH_AGENT = 100;
export const NAME = 104;
/** Records start at multiples of this. */
const ALIGN = 8;
const MAX_GRANTS = 0xffff;
const MAX_TEXT = 0xffff;

/** The statuses a record stores, by code (index). */
export const STATUS_CODES = ["", "active", "on_hold", "disabled", "limited", "expired"] as const;

export type RecordInput = {
  /** The user's own announcement (users.announce), sent instead of the settings' one. */
  announce?: string | null;
  /** The user's status (users.status); omitted: not stored. */
  status?: (typeof STATUS_CODES)[number];
  /** Lowercase canonical uuid. */
  userId: string;
  userName: string;
  /** Content-Disposition for this name when it is not the plain one (dispositionUnlessPlain). */
  disposition: string | undefined;
  layoutSlot: number;
  /** One per grant, in the layout's order. */
  credentials: readonly string[];
  uploadBytes: number;
  downloadBytes: number;
  /** The data limit in bytes; 0 = unlimited (omitted: 0). */
  totalBytes?: number;
  /** Expiry in unix seconds; 0 = never (omitted: 0). */
  expireS?: number;
  loadedAtS: number;
  /** The user's sub_token: 32 lowercase hex characters (another key to the record). */
  subToken?: string | null;
  /** The subscription was revoked: /sub/{user_id} is 404 (omitted: false). */
  isByIdRevoked?: boolean;
  /** The user's devices are checked when they fetch (omitted: false). */
  checksDevices?: boolean;
};

/** A record measured and ready to be written (nothing copied yet: the page gets the text itself). */
export type PreparedRecord = {
  readonly input: RecordInput;
  readonly nameBytes: number;
  readonly dispositionBytes: number;
  /** Per credential: its kind, and its stored length (16 for a uuid). */
  readonly kinds: readonly number[];
  readonly lengths: readonly number[];
  /** The sub_token's 16 bytes, if the user has one. */
  readonly token: Uint8Array | undefined;
  readonly tag: string;
  readonly length: number;
  readonly announceBytes: number;
};

const URL_SAFE_TEXT = /^[A-Za-z0-9._~-]+$/;
const BASE64_TEXT = /^[A-Za-z0-9+/]+={0,2}$/;

/** Hex digit values of lowercase [0-9a-f]; -1 for anything else. */
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) HEX_VALUE[48 + i] = i;
for (let i = 0; i < 6; i++) HEX_VALUE[97 + i] = 10 + i;

/**
 * Parses the lowercase canonical uuid at text[from, from + 36) into out[at, at + 16); false (out
 * partly written) when it is not one. Uppercase is not accepted: ids are stored lowercase.
 */
export function parseUuid(text: string, from: number, out: Uint8Array, at: number): boolean {
  if (text.length < from + 36) return false;
  let t = from;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) {
      if (text.charCodeAt(t++) !== 0x2d) return false;
    }
    const high = HEX_VALUE[text.charCodeAt(t)] ?? -1;
    const low = HEX_VALUE[text.charCodeAt(t + 1)] ?? -1;
    if (high < 0 || low < 0) return false;
    out[at + i] = (high << 4) | low;
    t += 2;
  }
  return true;
}

/** 32 lowercase hex characters at text[from, from + 32) into out[at, at + 16); false when they are not. */
export function parseToken(text: string, from: number, out: Uint8Array, at: number): boolean {
  if (text.length < from + 32) return false;
  for (let i = 0; i < 16; i++) {
    const high = HEX_VALUE[text.charCodeAt(from + 2 * i)] ?? -1;
    const low = HEX_VALUE[text.charCodeAt(from + 2 * i + 1)] ?? -1;
    if (high < 0 || low < 0) return false;
    out[at + i] = (high << 4) | low;
  }
  return true;
}

/** The 16 bytes of a sub token, or undefined when it is not 32 lowercase hex characters. */
export function tokenBytes(text: string): Uint8Array | undefined {
  const bytes = new Uint8Array(16);
  return text.length === 32 && parseToken(text, 0, bytes, 0) ? bytes : undefined;
}

/** The 16 bytes of a lowercase canonical uuid, or undefined for anything else. */
export function uuidBytes(text: string): Uint8Array | undefined {
  const bytes = new Uint8Array(16);
  return text.length === 36 && parseUuid(text, 0, bytes, 0) ? bytes : undefined;
}

export function credentialKind(text: string): number {
  if (isLowercaseUuid(text)) return KIND_UUID;
  if (URL_SAFE_TEXT.test(text)) return KIND_URL_SAFE;
  if (BASE64_TEXT.test(text) && text.length % 4 === 0) return KIND_BASE64;
  return KIND_OTHER;
}

/** The record's length and layout; undefined when it cannot be stored (not a uuid, too many grants, too long). */
export function prepareRecord(input: RecordInput): PreparedRecord | undefined {
  if (!isLowercaseUuid(input.userId) || input.credentials.length > MAX_GRANTS) return undefined;
  const nameBytes = Buffer.byteLength(input.userName, "utf8");
  const dispositionBytes = input.disposition?.length ?? 0;
  if (nameBytes > MAX_TEXT || dispositionBytes > MAX_TEXT) return undefined;
  let length = NAME + nameBytes + 2 + dispositionBytes;
  const kinds: number[] = [];
  const lengths: number[] = [];
  for (const text of input.credentials) {
    const kind = credentialKind(text);
    const bytes = kind === KIND_UUID ? 16 : Buffer.byteLength(text, "utf8");
    if (bytes > MAX_TEXT) return undefined;
    kinds.push(kind);
    lengths.push(bytes);
    length += kind === KIND_UUID ? 1 + 16 : 1 + 2 + bytes;
  }
  const announceBytes = input.announce == null ? 0 : Buffer.byteLength(input.announce, "utf8");
  if (announceBytes > MAX_TEXT) return undefined;
  if (input.announce != null) length += 2 + announceBytes;
  const tag = userTag(input.userName, input.credentials, input.announce);
  const token = input.subToken == null ? undefined : tokenBytes(input.subToken);
  return {
    input,
    nameBytes,
    dispositionBytes,
    kinds,
    lengths,
    token,
    tag,
    length: alignUp(length),
    announceBytes,
  };
}

const scratchUuid = new Uint8Array(16);

function isLowercaseUuid(text: string): boolean {
  return text.length === 36 && parseUuid(text, 0, scratchUuid, 0);
}

function alignUp(length: number): number {
  return Math.ceil(length / ALIGN) * ALIGN;
}

/** What the ETag says about the user: the name (title, file name), the credentials and the announcement, hashed. */
function userTag(name: string, credentials: readonly string[], announce?: string | null): string {
  const hash = createHash("sha256").update(name).update("\u0000");
  for (const credential of credentials) hash.update(credential).update("\u0000");
  if (announce != null) hash.update("\u0001").update(announce);
  return hash.digest("base64url").slice(0, TAG_LENGTH);
}

export function writeRecord(page: Buffer, at: number, record: PreparedRecord): void {
  const { input } = record;
  page.writeUInt32LE(record.length, at + LENGTH);
  page[at + FLAGS] =
    FLAG_LIVE |
    (input.disposition === undefined ? FLAG_PLAIN_DISPOSITION : 0) |
    (input.isByIdRevoked === true ? FLAG_NOT_BY_ID : 0) |
    (input.announce != null ? FLAG_ANNOUNCE : 0) |
    (input.checksDevices === true ? FLAG_DEVICES : 0);
  page[at + STATUS] = Math.max(0, STATUS_CODES.indexOf(input.status ?? ""));
  page.writeUInt16LE(input.credentials.length, at + GRANTS);
  page.writeUInt32LE(input.loadedAtS >>> 0, at + LOADED_AT);
  page.writeUInt32LE(input.layoutSlot, at + LAYOUT);
  page.writeDoubleLE(input.uploadBytes, at + UPLOAD);
  page.writeDoubleLE(input.downloadBytes, at + DOWNLOAD);
  page.writeDoubleLE(input.totalBytes ?? 0, at + TOTAL);
  page.writeDoubleLE(input.expireS ?? 0, at + EXPIRE);
  parseUuid(input.userId, 0, page, at + KEY);
  page.write(record.tag, at + TAG, TAG_LENGTH, "latin1");
  if (record.token === undefined) page.fill(0, at + TOKEN, at + TOKEN + 16);
  else page.set(record.token, at + TOKEN);
  page.writeUInt16LE(record.nameBytes, at + NAME_LENGTH);
  page.fill(0, at + FETCH_NOTED_AT, at + NAME);
  page.write(input.userName, at + NAME, record.nameBytes, "utf8");
  let offset = at + NAME + record.nameBytes;
  page.writeUInt16LE(record.dispositionBytes, offset);
  if (input.disposition !== undefined)
    page.write(input.disposition, offset + 2, record.dispositionBytes, "latin1");
  offset += 2 + record.dispositionBytes;
  for (const [i, text] of input.credentials.entries()) {
    const kind = record.kinds[i] as number;
    const bytes = record.lengths[i] as number;
    page[offset++] = kind;
    if (kind === KIND_UUID) parseUuid(text, 0, page, offset);
    else {
      page.writeUInt16LE(bytes, offset);
      offset += 2;
      page.write(text, offset, bytes, "utf8");
    }
    offset += bytes;
  }
  if (input.announce != null) {
    page.writeUInt16LE(record.announceBytes, offset);
    page.write(input.announce, offset + 2, record.announceBytes, "utf8");
    offset += 2 + record.announceBytes;
  }
  page.fill(0, offset, at + record.length);
}

/** The user's own announcement stored in the record at `at`, or undefined. */
export function announceAt(page: Buffer, at: number): string | undefined {
  if (((page[at + FLAGS] as number) & FLAG_ANNOUNCE) === 0) return undefined;
  const count = readU16(page, at + GRANTS);
  let offset = at + NAME + readU16(page, at + NAME_LENGTH);
  offset += 2 + readU16(page, offset);
  for (let i = 0; i < count; i++) {
    const kind = page[offset++] as number;
    offset += kind === KIND_UUID ? 16 : 2 + readU16(page, offset);
  }
  return page.toString("utf8", offset + 2, offset + 2 + readU16(page, offset));
}

export function readU16(page: Uint8Array, at: number): number {
  return (page[at] as number) | ((page[at + 1] as number) << 8);
}

const HEX = Buffer.from("0123456789abcdef", "latin1");

/** Writes the 16 bytes at `from` as a lowercase uuid (36 bytes) into out at `at`; returns the end. */
export function writeUuidText(src: Uint8Array, from: number, out: Uint8Array, at: number): number {
  let o = at;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out[o++] = 0x2d;
    const byte = src[from + i] as number;
    out[o++] = HEX[byte >>> 4] as number;
    out[o++] = HEX[byte & 15] as number;
  }
  return o;
}

/** Where each grant's credential is (kind, start, length), read from the record at `at`. */
export function credentialsAt(page: Uint8Array, at: number, into: Int32Array): number {
  const count = readU16(page, at + GRANTS);
  let offset = at + NAME + readU16(page, at + NAME_LENGTH);
  offset += 2 + readU16(page, offset);
  for (let i = 0; i < count; i++) {
    const kind = page[offset++] as number;
    const length = kind === KIND_UUID ? 16 : readU16(page, offset);
    if (kind !== KIND_UUID) offset += 2;
    into[3 * i] = kind;
    into[3 * i + 1] = offset;
    into[3 * i + 2] = length;
    offset += length;
  }
  return count;
}

/** A credential back as text (for the renderer that writes no link by itself, and the tests). */
export function credentialText(page: Buffer, kind: number, start: number, length: number): string {
  if (kind !== KIND_UUID) return page.toString("utf8", start, start + length);
  const out = Buffer.allocUnsafe(36);
  writeUuidText(page, start, out, 0);
  return out.toString("latin1");
}

/**
 * upload and download for Subscription-Userinfo: the period's used_bytes (already × each server's
 * coefficient) split in the proportion of the grants' uplink and downlink counters (raw bytes over
 * their lifetime); all of it download when the counters are zero. upload + download = used_bytes.
 */
export function splitUsage(usedBytes: number, uplinkBytes: number, downlinkBytes: number): [number, number] {
  if (!(usedBytes > 0)) return [0, 0];
  const both = uplinkBytes + downlinkBytes;
  if (!(both > 0)) return [0, usedBytes];
  const upload = Math.round(usedBytes * (uplinkBytes / both));
  return [upload, usedBytes - upload];
}

/** Whether the user's devices are checked when they fetch (FLAG_DEVICES). */
export function checksDevicesAt(page: Uint8Array, at: number): boolean {
  return ((page[at + FLAGS] as number) & FLAG_DEVICES) !== 0;
}

/** The record's user id and name, as text (for the device check, off the fast path). */
export function userOf(page: Buffer, at: number): { userId: string; userName: string } {
  return {
    userId: credentialText(page, KIND_UUID, at + KEY, 16),
    userName: page.toString("utf8", at + NAME, at + NAME + readU16(page, at + NAME_LENGTH)),
  };
}
