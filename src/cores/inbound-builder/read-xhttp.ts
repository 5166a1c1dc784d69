// Reads `xhttpSettings` (or `splithttpSettings`) of a server inbound as Xray's JSON loader does:
// `extra`, when given, replaces every setting but host, path and mode. Server-side settings go into
// the plan; client-only ones are checked here and reach clients through links, never the core.
import {
  parseXhttpRange,
  XHTTP_CLIENT_KEYS,
  XHTTP_KEEPALIVE_KEY,
  XHTTP_SERVER_KEYS,
  type XhttpRange,
  XMUX_RANGE_KEYS,
  xhttpMode,
} from "../../protocols/xhttp.ts";
import type { XhttpVariant } from "../wire-layout.ts";
import type { ObjectReader } from "./json-reader.ts";
import type { XhttpPlan } from "./plan.ts";

/** Settings added to splithttp's Config from Xray 26.1 on: inside layout xray-25.10, which starts at 25.10. */
const XRAY_26_KEYS = [
  "xPaddingObfsMode",
  "xPaddingKey",
  "xPaddingHeader",
  "xPaddingPlacement",
  "xPaddingMethod",
  "uplinkHTTPMethod",
  "sessionPlacement",
  "sessionKey",
  "sessionIDPlacement",
  "sessionIDKey",
  "seqPlacement",
  "seqKey",
  "uplinkDataPlacement",
  "uplinkDataKey",
  "uplinkChunkSize",
  "serverMaxHeaderBytes",
  "sessionIDTable",
  "sessionIDLength",
];

/** RFC 9110 token: what a client can send as a header name. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Control characters (a tab aside) break the request line or a header; whitespace breaks host and path. */
const CONTROL = /(?!\t)[\p{Cc}\u2028\u2029]/u;
const CONTROL_OR_SPACE = /[\s\p{Cc}]/u;

const RANGE_MESSAGE = 'must be an integer or a string "N" or "N-M" of digits (32-bit)';

export function emptyXhttpPlan(): XhttpPlan {
  return {
    host: "",
    path: "/",
    mode: "auto",
    xPaddingBytes: null,
    noSSEHeader: false,
    scMaxEachPostBytes: null,
    scMaxBufferedPosts: 0,
    scStreamUpServerSecs: null,
  };
}

export function readXhttp(
  settings: ObjectReader | undefined,
  variant: Exclude<XhttpVariant, "none">,
): XhttpPlan {
  const plan = emptyXhttpPlan();
  if (settings === undefined) return plan;
  plan.host = settings.string("host") ?? "";
  plan.path = settings.string("path") ?? "/";
  if (!plan.path.startsWith("/")) settings.problem("path", 'must start with "/"');
  for (const key of ["host", "path"] as const) {
    if (CONTROL_OR_SPACE.test(plan[key])) {
      settings.problem(key, "must not contain whitespace or control characters");
    }
  }
  const mode = xhttpMode(settings.raw("mode"));
  if (mode === undefined)
    settings.problem("mode", 'must be "auto", "packet-up", "stream-up" or "stream-one"');
  plan.mode = mode ?? "auto";
  const extra = settings.object("extra");
  if (extra !== undefined) {
    for (const key of ["host", "path", "mode"]) {
      extra.unsupported(key, "is ignored by Xray inside extra: set it next to extra");
    }
    for (const key of [...XHTTP_SERVER_KEYS, XHTTP_KEEPALIVE_KEY, ...XHTTP_CLIENT_KEYS]) {
      settings.unsupported(key, "is ignored by Xray when extra is given: put it inside extra");
    }
  }
  const source = extra ?? settings;
  readServerKeys(source, plan, variant);
  readClientKeys(source);
  for (const reader of extra === undefined ? [settings] : [settings, extra]) {
    for (const key of XRAY_26_KEYS) {
      reader.unsupported(
        key,
        "exists only from Xray 26.1 on (not in every release of its layout): not supported by Portcullis",
      );
    }
    reader.unsupported(
      "downloadSettings",
      "is a client setting (where clients download from): not supported by Portcullis",
    );
    reader.finish();
  }
  return plan;
}

function readServerKeys(source: ObjectReader, plan: XhttpPlan, variant: Exclude<XhttpVariant, "none">): void {
  plan.xPaddingBytes = readRange(source, "xPaddingBytes");
  const padding = plan.xPaddingBytes;
  if (padding !== null && !(padding.from === 0 && padding.to === 0) && padding.from <= 0) {
    source.problem("xPaddingBytes", "cannot be disabled: both ends must be above 0");
  }
  plan.noSSEHeader = source.bool("noSSEHeader") ?? false;
  plan.scMaxEachPostBytes = readRange(source, "scMaxEachPostBytes");
  plan.scMaxBufferedPosts = source.int("scMaxBufferedPosts", 0, Number.MAX_SAFE_INTEGER) ?? 0;
  if (variant === "keepalive") {
    plan.scStreamUpServerSecs = readRange(source, XHTTP_KEEPALIVE_KEY);
  } else {
    source.unsupported(
      XHTTP_KEEPALIVE_KEY,
      "is not in every release of this layout (Xray 25.1.1 reads that field as xmux): needs layout xray-25.10",
    );
  }
}

/** Client settings: checked as Xray would, not sent to the core. */
function readClientKeys(source: ObjectReader): void {
  const headers = source.object("headers");
  if (headers !== undefined) {
    for (const name of Object.keys(headers.value)) {
      const value = headers.string(name);
      if (name.toLowerCase() === "host") headers.problem(name, 'must not be "Host" (use host)');
      else if (!HEADER_NAME.test(name)) headers.problem(name, "is not a valid HTTP header name");
      else if (value !== undefined && CONTROL.test(value)) {
        headers.problem(name, "must not contain control characters or line breaks");
      }
    }
    headers.finish();
  }
  source.bool("noGRPCHeader");
  readRange(source, "scMinPostsIntervalMs");
  const xmux = source.object("xmux");
  if (xmux === undefined) return;
  const ranges = XMUX_RANGE_KEYS.map((key) => [key, readRange(xmux, key)] as const);
  const set = (key: string) => ranges.some(([name, range]) => name === key && range !== null && range.to > 0);
  if (set("maxConnections") && set("maxConcurrency")) {
    xmux.problem("maxConnections", "cannot be given together with maxConcurrency");
  }
  xmux.int("hKeepAlivePeriod", -(2 ** 53 - 1), 2 ** 53 - 1);
  xmux.finish();
}

function readRange(reader: ObjectReader, key: string): XhttpRange | null {
  const raw = reader.raw(key);
  if (raw === undefined || raw === null) return null;
  const range = parseXhttpRange(raw);
  if (range === undefined) reader.problem(key, RANGE_MESSAGE);
  return range ?? null;
}
