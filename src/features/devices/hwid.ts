// What an app says about its device when it fetches /sub (Happ, v2rayTun, v2rayN; the same headers
// Remnawave, PasarGuard and 3x-ui read): x-hwid, x-device-os, x-ver-os, x-device-model, and the
// User-Agent as the app. Header values arrive as Node gives them (one character per byte), from
// anyone: they are checked here before anything is stored or compared. Pure functions, no I/O.
import { UNSAFE_IN_LINE } from "../../lib/text.ts";

/** The device an app described; hwid undefined: none sent. */
export type DeviceHeaders = {
  hwid: string | undefined;
  os: string | null;
  osVersion: string | null;
  model: string | null;
  app: string | null;
};

/** What the fetch carried: a device, no HWID, or an HWID that cannot be one (refused, never stored). */
export type DeviceClaim =
  | { kind: "device"; device: DeviceHeaders & { hwid: string } }
  | { kind: "none" }
  | { kind: "invalid" };

/** An HWID is 1-128 printable ASCII characters (apps send hex, uuids or base64). */
export const MAX_HWID = 128;
/** App, OS, version and model are kept to this many characters (longer ones are cut). */
export const MAX_DEVICE_TEXT = 128;
const HWID = /^[\x21-\x7e]{1,128}$/;

/**
 * The claim in a request's raw headers (name, value pairs as IncomingMessage#rawHeaders). A header
 * sent twice is refused for the HWID (which one would count?) and the first is kept for the rest.
 */
export function deviceClaim(rawHeaders: readonly string[]): DeviceClaim {
  let hwid: string | undefined;
  let hwidCount = 0;
  const texts: Record<string, string | undefined> = {};
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    const value = rawHeaders[i + 1] as string;
    if (name === "x-hwid") {
      hwidCount++;
      hwid = value;
    } else if (
      (name === "x-device-os" || name === "x-ver-os" || name === "x-device-model" || name === "user-agent") &&
      texts[name] === undefined
    ) {
      texts[name] = value;
    }
  }
  if (hwidCount === 0) return { kind: "none" };
  const trimmed = (hwid as string).trim();
  if (hwidCount > 1 || !HWID.test(trimmed)) return { kind: "invalid" };
  return {
    kind: "device",
    device: {
      hwid: trimmed,
      os: deviceText(texts["x-device-os"]),
      osVersion: deviceText(texts["x-ver-os"]),
      model: deviceText(texts["x-device-model"]),
      app: deviceText(texts["user-agent"]),
    },
  };
}

const UNSAFE_GLOBAL = new RegExp(UNSAFE_IN_LINE.source, "gu");

/**
 * A header value as text fit to store and show: read as UTF-8 (invalid bytes become U+FFFD), controls,
 * line breaks (U+0085, U+2028, U+2029) and bidirectional overrides dropped, spaces trimmed, cut to
 * MAX_DEVICE_TEXT characters (never inside a surrogate pair); null when nothing is left.
 */
export function deviceText(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const head = raw.length > MAX_DEVICE_TEXT * 4 ? raw.slice(0, MAX_DEVICE_TEXT * 4) : raw;
  const text = Buffer.from(head, "latin1").toString("utf8").replace(UNSAFE_GLOBAL, "").trim();
  if (text === "") return null;
  const chars = Array.from(text);
  return chars.length > MAX_DEVICE_TEXT ? chars.slice(0, MAX_DEVICE_TEXT).join("") : text;
}

/** Why a fetch gets no links: over the device limit, or no (usable) HWID where one is needed. */
export type DeviceRefusal = "device_limit" | "hwid_required";

/** The x-hwid-* headers of an answer to a user whose devices are checked (apps show them). */
export function hwidHeaders(refusal: DeviceRefusal | undefined): string[] {
  const headers = ["x-hwid-active", "true"];
  if (refusal === "device_limit") headers.push("x-hwid-max-devices-reached", "true", "x-hwid-limit", "true");
  else if (refusal === "hwid_required") headers.push("x-hwid-not-supported", "true");
  return headers;
}
