// XHTTP (Xray's splithttp transport) facts shared by the inbound builder, template links and share
// links: the modes, Xray's integer ranges, how `extra` replaces the other settings, and which keys
// only a client reads (they reach clients through links, never the core).
import { isJsonObject, type JsonObject } from "../lib/json.ts";

export const XHTTP_MODES = ["auto", "packet-up", "stream-up", "stream-one"] as const;
export type XhttpMode = (typeof XHTTP_MODES)[number];

export function xhttpMode(value: unknown): XhttpMode | undefined {
  if (value === undefined || value === "") return "auto";
  return XHTTP_MODES.find((mode) => mode === value);
}

export type XhttpRange = { from: number; to: number };

const INT32_MAX = 2 ** 31 - 1;
const INT32_MIN = -(2 ** 31);

/**
 * Xray's Int32Range: a JSON integer, or a string "N" or "N-M" of digits; the ends are put in order
 * (Xray swaps them). Undefined for anything else.
 */
export function parseXhttpRange(value: unknown): XhttpRange | undefined {
  if (typeof value === "number") {
    if (!Number.isInteger(value) || value < INT32_MIN || value > INT32_MAX) return undefined;
    return { from: value, to: value };
  }
  if (typeof value !== "string") return undefined;
  const match = /^(\d{1,10})(?:-(\d{1,10}))?$/.exec(value);
  if (match === null) return undefined;
  const left = Number(match[1]);
  const right = match[2] === undefined ? left : Number(match[2]);
  if (left > INT32_MAX || right > INT32_MAX) return undefined;
  return { from: Math.min(left, right), to: Math.max(left, right) };
}

/** How links write a range: "N" or "N-M", a string Xray and mihomo both read. */
export function xhttpRangeText(range: XhttpRange): string {
  return range.from === range.to ? String(range.from) : `${range.from}-${range.to}`;
}

/** Keys `extra` may hold besides host, path and mode (Xray reads them from extra alone when it is given). */
export const XHTTP_SERVER_KEYS = ["xPaddingBytes", "noSSEHeader", "scMaxEachPostBytes", "scMaxBufferedPosts"];
export const XHTTP_KEEPALIVE_KEY = "scStreamUpServerSecs";
/** Read by clients only; a server inbound ignores them, links carry them in `extra`. */
export const XHTTP_CLIENT_KEYS = ["headers", "noGRPCHeader", "scMinPostsIntervalMs", "xmux"];
export const XMUX_RANGE_KEYS = [
  "maxConcurrency",
  "maxConnections",
  "cMaxReuseTimes",
  "hMaxRequestTimes",
  "hMaxReusableSecs",
] as const;

/**
 * The object the other settings are read from: Xray's loader takes everything but host, path and
 * mode from `extra` alone when `extra` is given (infra/conf/transport_internet.go, SplitHTTPConfig).
 */
export function xhttpSettingsSource(settings: JsonObject): JsonObject {
  const extra = settings.extra;
  return extra === undefined || extra === null ? settings : isJsonObject(extra) ? extra : {};
}

/** What a client needs beyond host, path and mode: the link's `extra`, in Xray's JSON form. */
export type XhttpClientExtra = {
  headers?: Record<string, string>;
  xPaddingBytes?: string;
  noGRPCHeader?: true;
  scMaxEachPostBytes?: string;
  scMinPostsIntervalMs?: string;
  xmux?: XhttpXmux;
};
export type XhttpXmux = Partial<Record<(typeof XMUX_RANGE_KEYS)[number], string>> & {
  hKeepAlivePeriod?: number;
};

/** The client-side settings of an inbound's xhttpSettings (already checked by the builder). */
export function xhttpClientExtra(settings: JsonObject): XhttpClientExtra | undefined {
  const source = xhttpSettingsSource(settings);
  const extra: XhttpClientExtra = {};
  const headers = isJsonObject(source.headers) ? stringEntries(source.headers) : {};
  if (Object.keys(headers).length > 0) extra.headers = headers;
  for (const key of ["xPaddingBytes", "scMaxEachPostBytes", "scMinPostsIntervalMs"] as const) {
    const range = parseXhttpRange(source[key]);
    if (range !== undefined && range.to !== 0) extra[key] = xhttpRangeText(range);
  }
  if (source.noGRPCHeader === true) extra.noGRPCHeader = true;
  const xmux = isJsonObject(source.xmux) ? xmuxOf(source.xmux) : undefined;
  if (xmux !== undefined) extra.xmux = xmux;
  return Object.keys(extra).length > 0 ? extra : undefined;
}

function xmuxOf(xmux: JsonObject): XhttpXmux | undefined {
  const out: XhttpXmux = {};
  for (const key of XMUX_RANGE_KEYS) {
    const range = parseXhttpRange(xmux[key]);
    if (range !== undefined && range.to !== 0) out[key] = xhttpRangeText(range);
  }
  const period = xmux.hKeepAlivePeriod;
  if (typeof period === "number" && Number.isInteger(period) && period !== 0) out.hKeepAlivePeriod = period;
  return Object.keys(out).length > 0 ? out : undefined;
}

function stringEntries(object: JsonObject): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(object)) if (typeof value === "string") out[key] = value;
  return out;
}
