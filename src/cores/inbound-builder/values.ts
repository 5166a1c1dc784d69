// Checks for single values of an inbound (tag, port, listen address, email, credentials) shared by
// the JSON reader and buildUser. Each returns an error message or undefined.

import { isIP } from "node:net";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TAG = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,99}$/;
// Control characters and whitespace: stats names and logs must stay one clean token.
const BAD_EMAIL_CHAR = /[\s\p{Cc}]/u;
const BAD_SECRET_CHAR = /\p{Cc}/u;

export function tagProblem(tag: string): string | undefined {
  if (!TAG.test(tag)) return "must be 1-100 characters of letters, digits and _ . : @ - (no >>>)";
  return undefined;
}

/** Empty emails cannot be removed from the core; ">>>" would break the stats counter names. */
export function emailProblem(email: string): string | undefined {
  if (email === "") return "must not be empty (the core cannot remove a user without an email)";
  if (email.length > 128) return "must be at most 128 characters";
  if (email.includes(">>>")) return 'must not contain ">>>" (it separates stats counter names)';
  if (BAD_EMAIL_CHAR.test(email)) return "must not contain whitespace or control characters";
  return undefined;
}

export function uuidProblem(id: string): string | undefined {
  return UUID.test(id) ? undefined : "must be a UUID (8-4-4-4-12 hex digits)";
}

export function passwordProblem(password: string): string | undefined {
  if (password === "") return "must not be empty";
  if (password.length > 256) return "must be at most 256 characters";
  if (BAD_SECRET_CHAR.test(password)) return "must not contain control characters";
  return undefined;
}

export function decodeStdBase64(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return undefined;
  return new Uint8Array(Buffer.from(text, "base64"));
}

/** Go's base64.RawURLEncoding: URL alphabet, no padding. */
export function decodeRawUrlBase64(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return undefined;
  return new Uint8Array(Buffer.from(text, "base64url"));
}

/** Xray's JSON port: an integer or a string of digits; ranges and lists are not supported here. */
export function parsePort(value: unknown): { port: number } | { problem: string } {
  const text = typeof value === "number" ? String(value) : typeof value === "string" ? value.trim() : "";
  if (!/^\d{1,5}$/.test(text)) {
    return { problem: "must be one port number from 1 to 65535 (ranges and lists are not supported)" };
  }
  const port = Number(text);
  if (port < 1 || port > 65535) return { problem: "must be one port number from 1 to 65535" };
  return { port };
}

/** IP literal to raw bytes; domains and unix socket paths are refused (the core would panic or bind a socket file). */
export function parseListen(text: string): Uint8Array | undefined {
  const version = isIP(text);
  if (version === 4) return new Uint8Array(text.split(".").map(Number));
  if (version === 6) return ipv6Bytes(text);
  return undefined;
}

function ipv6Bytes(text: string): Uint8Array {
  const [head = "", tail] = text.split("::");
  const expand = (part: string): number[] => {
    if (part === "") return [];
    return part.split(":").flatMap((group) => {
      if (group.includes(".")) return [...(parseListen(group) ?? [])];
      const value = Number.parseInt(group, 16);
      return [value >> 8, value & 0xff];
    });
  };
  const left = expand(head);
  const right = tail === undefined ? [] : expand(tail);
  const zeros = new Array<number>(16 - left.length - right.length).fill(0);
  return new Uint8Array([...left, ...zeros, ...right]);
}

/** "x.y.z" to 3 bytes, as Xray reads REALITY's min/maxClientVer. */
export function parseClientVersion(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length > 3 || !parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) < 256)) {
    return undefined;
  }
  const bytes = new Uint8Array(3);
  parts.forEach((part, index) => {
    bytes[index] = Number(part);
  });
  return bytes;
}

/** A REALITY short id: up to 16 hex digits, even length, stored as 8 bytes padded with zeros. */
export function parseShortId(text: string): Uint8Array | undefined {
  if (!/^([0-9a-fA-F]{2}){0,8}$/.test(text)) return undefined;
  const bytes = new Uint8Array(8);
  bytes.set(Buffer.from(text, "hex"));
  return bytes;
}
