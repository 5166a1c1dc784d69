// The secret part of a share link (what LinkShape.secret returns for a credential), split into what
// is the same for every user of an inbound and what must be written per user, straight from a stored
// credential. The link builders validate and escape on every call (Shadowsocks 2022 decodes its keys,
// VMess JSON-encodes and base64s the whole link); per request that costs more than the rest of the
// answer. A secret is `before` + what write() puts out + `after[variant]`, where before and after are
// constant text the template encodes ahead. Each writer handles the credential kinds whose result it
// knows exactly and returns -1 for any other, which the caller then renders through the builders.
// Every writer is checked against its shape when it is made (probes of each kind, valid and
// invalid): a writer that disagrees with the builder once is not used at all.
import { randomBytes } from "node:crypto";
import type { LinkShape } from "../../links/shape.ts";
import { InvalidLinkTargetError } from "../../links/uri.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import { encodeFinal, encodeGroups, STANDARD, URL_SAFE } from "./base64.ts";
import {
  credentialKind,
  KIND_BASE64,
  KIND_OTHER,
  KIND_URL_SAFE,
  KIND_UUID,
  uuidBytes,
  writeUuidText,
} from "./engine/user-record.ts";

export type SecretWriter = {
  /** Constant text of every secret before the part write() puts out. */
  readonly before: string;
  /** Constant text after it, by the variant write() reported (writtenVariant.value). */
  readonly after: readonly string[];
  /** At most how many bytes write() puts out for a credential stored in `length` bytes. */
  room(length: number): number;
  /** Writes the user's part into out at `at`; returns the end, or -1 when this credential needs the builder. */
  write(page: Uint8Array, kind: number, start: number, length: number, out: Uint8Array, at: number): number;
};

/** Which `after` text follows what the last write() put out. */
export const writtenVariant = { value: 0 };

const PERCENT = 0x25;
const HEX_UPPER = Buffer.from("0123456789ABCDEF", "latin1");

/** The credential as it is (kinds whose text no escaping, JSON or URI, changes). */
function writePlain(
  page: Uint8Array,
  kind: number,
  start: number,
  length: number,
  out: Uint8Array,
  at: number,
) {
  if (kind === KIND_UUID) return writeUuidText(page, start, out, at);
  for (let i = 0; i < length; i++) out[at + i] = page[start + i] as number;
  return at + length;
}

/** encodeURIComponent of a credential: uuids and URL-safe text stay, base64's + / = become %XX. */
function writeEscaped(
  page: Uint8Array,
  kind: number,
  start: number,
  length: number,
  out: Uint8Array,
  at: number,
) {
  if (kind === KIND_UUID || kind === KIND_URL_SAFE) return writePlain(page, kind, start, length, out, at);
  if (kind !== KIND_BASE64) return -1;
  let o = at;
  for (let i = start; i < start + length; i++) {
    const c = page[i] as number;
    if (c === 0x2b || c === 0x2f || c === 0x3d) {
      out[o++] = PERCENT;
      out[o++] = HEX_UPPER[c >>> 4] as number;
      out[o++] = HEX_UPPER[c & 15] as number;
    } else out[o++] = c;
  }
  return o;
}

/** VLESS and Trojan: the escaped credential (Trojan refuses an empty one: that kind is KIND_OTHER). */
const escapedWriter: SecretWriter = {
  before: "",
  after: [""],
  room: (length) => 3 * Math.max(length, 12),
  write(page, kind, start, length, out, at) {
    writtenVariant.value = 0;
    return writeEscaped(page, kind, start, length, out, at);
  },
};

/** Shadowsocks 2022: `method:` (and the server key's part) before, the escaped user key of `keyBytes` bytes. */
function keyWriter(before: string, keyBytes: number): SecretWriter {
  return {
    before,
    after: [""],
    room: (length) => 3 * length,
    write(page, kind, start, length, out, at) {
      if (kind !== KIND_BASE64 || base64Bytes(page, start, length) !== keyBytes) return -1;
      writtenVariant.value = 0;
      return writeEscaped(page, kind, start, length, out, at);
    },
  };
}

/** Decoded length of padded standard base64. */
function base64Bytes(page: Uint8Array, start: number, length: number): number {
  const padding = (page[start + length - 1] === 0x3d ? 1 : 0) + (page[start + length - 2] === 0x3d ? 1 : 0);
  return (length / 4) * 3 - padding;
}

/**
 * A secret that is base64 of constant text around the credential: VMess (the JSON of the link,
 * standard alphabet with padding) and Shadowsocks before 2022 (`method:password`, URL-safe, no
 * padding). Only the groups that touch the credential are written: the ones wholly inside the text
 * before it are `before`; those after it depend on where the credential ends within a group (its
 * length modulo 3): that is the variant. `acceptsAnyText`: the credential goes in as UTF-8 whatever
 * it is (no JSON escaping).
 */
function base64Writer(
  prefix: string,
  suffix: string,
  encoding: "base64" | "base64url",
  acceptsAnyText: boolean,
): SecretWriter {
  const alphabet = encoding === "base64" ? STANDARD : URL_SAFE;
  const pad = encoding === "base64"; // Node's base64url never pads: neither do these links
  const head = Buffer.from(prefix, "utf8");
  const tail = Buffer.from(suffix, "utf8");
  const whole = head.length - (head.length % 3);
  const lead = head.subarray(whole); // 0-2 bytes that share a group with the credential
  // after[b]: the groups after the credential when b bytes of the suffix complete its last group.
  const after = [0, 1, 2].map((b) => (tail.length < b ? "" : tail.subarray(b).toString(encoding)));
  const scratch = Buffer.alloc(2048);
  return {
    before: head.subarray(0, whole).toString(encoding),
    after,
    room: (length) => Math.ceil((lead.length + 36 + length + tail.length) / 3) * 4 + 4,
    write(page, kind, start, length, out, at) {
      if ((kind === KIND_OTHER && !acceptsAnyText) || length === 0 || length > 1024) return -1;
      for (let i = 0; i < lead.length; i++) scratch[i] = lead[i] as number;
      let end = writePlain(page, kind, start, length, scratch, lead.length);
      const b = (3 - (end % 3)) % 3;
      writtenVariant.value = b;
      if (tail.length < b) {
        // The suffix does not complete the group: all of it is written here, and the text ends.
        for (let i = 0; i < tail.length; i++) scratch[end++] = tail[i] as number;
        return encodeFinal(scratch, 0, end, out, at, alphabet, pad);
      }
      for (let i = 0; i < b; i++) scratch[end++] = tail[i] as number;
      return encodeGroups(scratch, 0, end, out, at, alphabet);
    },
  };
}

/** The writer for this inbound's links, or undefined: its links are then rendered by the builders only. */
export function secretWriterFor(params: LinkParams, shape: LinkShape): SecretWriter | undefined {
  const writer = candidateFor(params, shape);
  return writer !== undefined && agreesWithShape(writer, shape) ? writer : undefined;
}

function candidateFor(params: LinkParams, shape: LinkShape): SecretWriter | undefined {
  switch (params.protocol) {
    case "vless":
    case "trojan":
      return escapedWriter;
    case "vmess": {
      // The JSON around the id, read back from the builder's own output.
      const id = PROBES.uuid;
      const json = attempt(() => Buffer.from(shape.secret(id), "base64").toString("utf8"));
      const at = json?.indexOf(id) ?? -1;
      if (json === undefined || at < 0) return undefined;
      return base64Writer(json.slice(0, at), json.slice(at + id.length), "base64", false);
    }
    case "shadowsocks":
      return params.shadowsocksMethod?.startsWith("2022-") ? ss2022Writer(shape) : ssWriter(shape);
  }
}

function ss2022Writer(shape: LinkShape): SecretWriter | undefined {
  for (const keyBytes of [16, 32]) {
    const key = randomBytes(keyBytes).toString("base64");
    const secret = attempt(() => shape.secret(key));
    const escaped = encodeURIComponent(key);
    if (secret?.endsWith(escaped)) return keyWriter(secret.slice(0, -escaped.length), keyBytes);
  }
  return undefined;
}

function ssWriter(shape: LinkShape): SecretWriter | undefined {
  const password = PROBES.urlSafe;
  const secret = attempt(() => shape.secret(password));
  const text = secret === undefined ? undefined : Buffer.from(secret, "base64url").toString("utf8");
  if (text === undefined || !text.endsWith(password)) return undefined;
  return base64Writer(text.slice(0, -password.length), "", "base64url", true);
}

const PROBES = {
  uuid: "0f1e2d3c-4b5a-4697-8877-66554433aa11",
  urlSafe: "Ab0_-.~q8XzKp3LmNt7Rv2Wy",
};

/** Credentials of every kind and length modulo 3, valid and invalid for each builder. */
function probes(): string[] {
  const keys = [16, 32].flatMap((bytes) => [
    randomBytes(bytes).toString("base64"),
    Buffer.alloc(bytes, 0xfb).toString("base64"), // "+" and "/" in the key
  ]);
  return [
    PROBES.uuid,
    "00000000-0000-4000-8000-000000000000",
    PROBES.urlSafe,
    "x",
    "xy",
    "xyz",
    ...keys,
    "QUJD",
    "QUI=",
    "",
    "pä ss:/?#%",
    '"quoted"\\',
  ];
}

/** Each probe: before + what the writer puts out + after is the shape's secret, or the writer says -1. */
function agreesWithShape(writer: SecretWriter, shape: LinkShape): boolean {
  const out = Buffer.alloc(4096);
  for (const probe of probes()) {
    const expected = attempt(() => shape.secret(probe));
    const kind = credentialKind(probe);
    const bytes = kind === KIND_UUID ? (uuidBytes(probe) as Uint8Array) : Buffer.from(probe, "utf8");
    const end = writer.write(bytes, kind, 0, bytes.length, out, 0);
    if (end < 0) continue;
    const got = writer.before + out.toString("latin1", 0, end) + writer.after[writtenVariant.value];
    if (expected === undefined || got !== expected || end > writer.room(bytes.length)) return false;
  }
  return true;
}

function attempt<T>(make: () => T): T | undefined {
  try {
    return make();
  } catch (error) {
    if (error instanceof InvalidLinkTargetError) return undefined;
    throw error;
  }
}
