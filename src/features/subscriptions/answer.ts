// A user's record turned into the HTTP answer: the body from the layout's template, the profile
// headers from the name, the traffic totals, the ETag, and 304 Not Modified for a matching
// If-None-Match. The fast path and the Fastify route both answer through here, so their bytes are
// the same by construction. No I/O.

import type { Format } from "../../lib/subscription-formats.ts";
import { Base64Stream, constantText, STANDARD } from "./base64-stream.ts";
import type { DocumentBases } from "./document-template.ts";
import { CONTENT_TYPES } from "./formats.ts";
import type { Layout } from "./layouts.ts";
import type { LinksTemplate } from "./links-template.ts";
import { NO_TRAFFIC, TITLE_PREFIX, UPDATE_INTERVAL_HOURS, userinfoOf } from "./subscription.ts";
import {
  DOWNLOAD,
  EXPIRE,
  FLAG_PLAIN_DISPOSITION,
  FLAGS,
  NAME,
  NAME_LENGTH,
  readU16,
  TAG,
  TAG_LENGTH,
  TOTAL,
  UPLOAD,
} from "./user-record.ts";

const CONTENT_TYPE = "text/plain; charset=utf-8";
const UPDATE_INTERVAL = String(UPDATE_INTERVAL_HOURS);
/** Clients and proxies may store a subscription but must ask again (If-None-Match) before using it. */
const CACHE_CONTROL = "no-cache";
const TITLE_TEXT = constantText(TITLE_PREFIX);
const TITLE_START = Buffer.from("base64:", "latin1");
const DISPOSITION_START = Buffer.from('attachment; filename="', "latin1");
const QUOTE = Buffer.from('"', "latin1");
const stream = new Base64Stream(STANDARD, 8192);

/** Names and values as Node's writeHead takes them: 7 pairs for 200, 3 for 304, then room for more. */
export const OK_HEADERS = 14;
export const NOT_MODIFIED_HEADERS = 6;

export function okHeaders(extra = 0): string[] {
  // biome-ignore format: name, value pairs
  const headers = [
    "content-type", CONTENT_TYPE,
    "subscription-userinfo", "",
    "profile-title", "",
    "profile-update-interval", UPDATE_INTERVAL,
    "content-disposition", "",
    "etag", "",
    "cache-control", CACHE_CONTROL,
  ];
  for (let i = 0; i < extra; i++) headers.push("", "");
  return headers;
}

/** What a 304 repeats (RFC 9110 §15.4.5), plus the current traffic for apps that read it from any answer. */
export function notModifiedHeaders(extra = 0): string[] {
  const headers = ["etag", "", "cache-control", CACHE_CONTROL, "subscription-userinfo", ""];
  for (let i = 0; i < extra; i++) headers.push("", "");
  return headers;
}

/**
 * Fills the values of `ok` (for 200) and returns the body, or fills `notModified` and returns
 * undefined (304). The arrays come from okHeaders()/notModifiedHeaders() and may be reused. What
 * the body writes per user, the ETag, title and file name are written into one buffer and become one
 * string, of which the header values are slices; the body is those slices joined with the layout's
 * constant text (a rope: the socket write copies it once).
 */
export function answerInto(
  layout: Layout,
  page: Buffer,
  at: number,
  ifNoneMatch: string | undefined,
  ok: string[],
  notModified: string[],
): string | undefined {
  const template = layout.template;
  const userinfo = userinfoAt(page, at);
  if (ifNoneMatch !== undefined) {
    const etag = `"${template.tag}${page.toString("latin1", at + TAG, at + TAG + TAG_LENGTH)}"`;
    if (matchesAny(ifNoneMatch, etag)) {
      notModified[1] = etag;
      notModified[5] = userinfo;
      return undefined;
    }
  }
  const body = writeAnswer(template, true, NO_LETTER, template.tagBytes, page, at) as string;
  ok[3] = userinfo;
  ok[5] = written.slice(etagEnd, titleEnd);
  ok[9] = written.slice(titleEnd);
  ok[11] = written.slice(bodyEnd, etagEnd);
  return body;
}

/**
 * What writeAnswer() wrote, read back as one string, and where in it the body ends and the ETag and
 * the title end (module state: answers are synchronous, and read it before the next one).
 */
let written = "";
let bodyEnd = 0;
let etagEnd = 0;
let titleEnd = 0;

/**
 * Writes the record's base64 body (when `withBody`; by the builders when the template cannot) and
 * then the profile values into the stream, and reads the stream back once (`written`). Returns the
 * body (the noted constant text joined in), or undefined without one.
 */
function writeAnswer(
  template: LinksTemplate,
  withBody: boolean,
  letter: Buffer,
  layoutTag: Buffer,
  page: Buffer,
  at: number,
): string | undefined {
  let body: string | undefined;
  if (!withBody || !template.renderInto(stream, page, at)) {
    stream.reset();
    if (withBody) body = template.renderByBuilders(page, at);
  }
  bodyEnd = stream.at;
  appendProfile(letter, layoutTag, page, at);
  written = (stream.out as Buffer).toString("latin1", 0, stream.at);
  return withBody ? (body ?? stream.text(bodyEnd, written)) : undefined;
}

/**
 * Appends the values of ETag (`"` letter layout-tag record-tag `"`), Profile-Title (`base64:` and the
 * title in base64) and Content-Disposition to the stream's output, as they are; sets etagEnd and
 * titleEnd. One buffer, read back as one string by the caller, instead of a string built for each.
 */
function appendProfile(letter: Buffer, layoutTag: Buffer, page: Buffer, at: number): void {
  stream.appendBytes(QUOTE, 0, 1);
  stream.appendBytes(letter, 0, letter.length);
  stream.appendBytes(layoutTag, 0, layoutTag.length);
  stream.appendBytes(page, at + TAG, at + TAG + TAG_LENGTH);
  stream.appendBytes(QUOTE, 0, 1);
  etagEnd = stream.at;
  const nameStart = at + NAME;
  const nameEnd = nameStart + readU16(page, at + NAME_LENGTH);
  stream.appendBytes(TITLE_START, 0, TITLE_START.length);
  stream.pushConstant(TITLE_TEXT);
  stream.reserveRaw(nameEnd - nameStart);
  const { raw, open } = stream;
  for (let i = nameStart; i < nameEnd; i++) raw[open + i - nameStart] = page[i] as number;
  stream.pushRaw(open + nameEnd - nameStart);
  titleEnd = stream.finish(true);
  if (((page[at + FLAGS] as number) & FLAG_PLAIN_DISPOSITION) !== 0) {
    stream.appendBytes(DISPOSITION_START, 0, DISPOSITION_START.length);
    stream.appendBytes(page, nameStart, nameEnd);
    stream.appendBytes(QUOTE, 0, 1);
  } else {
    stream.appendBytes(page, nameEnd + 2, nameEnd + 2 + readU16(page, nameEnd));
  }
}

/** The record's Subscription-Userinfo (the shared constant when every number is 0). */
function userinfoAt(page: Buffer, at: number): string {
  const upload = page.readDoubleLE(at + UPLOAD);
  const download = page.readDoubleLE(at + DOWNLOAD);
  const total = page.readDoubleLE(at + TOTAL);
  const expire = page.readDoubleLE(at + EXPIRE);
  if (upload === 0 && download === 0 && total === 0 && expire === 0) return NO_TRAFFIC;
  return userinfoOf(upload, download, total, expire);
}

/** If-None-Match: `*` or a list of entity tags, compared weakly (RFC 9110 §13.1.2). */
export function matchesAny(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch === etag) return true;
  for (const part of ifNoneMatch.split(",")) {
    const tag = part.trim();
    if (tag === "*" || tag === etag || tag === `W/${etag}`) return true;
  }
  return false;
}

export type AnswerSettings = {
  bases: DocumentBases;
  /** Profile-Update-Interval's value. */
  updateInterval: string;
  /** Name, value pairs sent with every 200 (Support-Url, Announce). */
  extras: readonly string[];
  /** The public base URL: Profile-Web-Page-Url is it + /sub/{key}. */
  publicUrl: string | null;
};

/**
 * body: the bytes to send, as a Buffer or as a latin1 string (a character per byte: base64 is ASCII,
 * a document its UTF-8 bytes); `body.length` is the byte count either way. bodyBytes() gives a Buffer.
 */
export type FormatResponse = { status: 200 | 304; headers: string[]; body: string | Buffer | undefined };

/** The body's bytes as a Buffer (for writers that would encode a string as UTF-8). */
export function bodyBytes(body: string | Buffer): Buffer {
  return typeof body === "string" ? Buffer.from(body, "latin1") : body;
}

/** A letter per format in the ETag, so two formats of one user never share one. */
const ETAG_LETTER: Record<Format, string> = {
  base64: "",
  links: "L",
  mihomo: "M",
  "sing-box": "S",
  "xray-json": "X",
};
const LETTER_BYTES = Object.fromEntries(
  Object.entries(ETAG_LETTER).map(([format, letter]) => [format, Buffer.from(letter, "latin1")]),
) as Record<Format, Buffer>;
const NO_LETTER = LETTER_BYTES.base64;

/** The answer in any format (the base64 one too when settings add headers): new header lists per call. */
export function formatAnswer(
  format: Format,
  key: string,
  layout: Layout,
  page: Buffer,
  at: number,
  ifNoneMatch: string | undefined,
  settings: AnswerSettings,
): FormatResponse {
  const userinfo = userinfoAt(page, at);
  const isDocument = format === "mihomo" || format === "sing-box" || format === "xray-json";
  const document = isDocument ? layout.document(format, settings.bases) : undefined;
  if (ifNoneMatch !== undefined) {
    const layoutTag = document?.tag ?? layout.template.tag;
    const etag = `"${ETAG_LETTER[format]}${layoutTag}${page.toString("latin1", at + TAG, at + TAG + TAG_LENGTH)}"`;
    if (matchesAny(ifNoneMatch, etag)) {
      return {
        status: 304,
        headers: ["etag", etag, "cache-control", CACHE_CONTROL, "subscription-userinfo", userinfo],
        body: undefined,
      };
    }
  }
  const { template } = layout;
  const base64 = writeAnswer(
    template,
    document === undefined,
    LETTER_BYTES[format],
    document?.tagBytes ?? template.tagBytes,
    page,
    at,
  );
  let body: string | Buffer;
  if (document !== undefined) body = document.render(page, at);
  else body = format === "links" ? Buffer.from(base64 as string, "base64") : (base64 as string);
  // biome-ignore format: name, value pairs
  const headers = [
    "content-type", CONTENT_TYPES[format],
    "subscription-userinfo", userinfo,
    "profile-title", written.slice(etagEnd, titleEnd),
    "profile-update-interval", settings.updateInterval,
    "content-disposition", written.slice(titleEnd),
    "etag", written.slice(bodyEnd, etagEnd),
    "cache-control", CACHE_CONTROL,
    ...settings.extras,
  ];
  if (settings.publicUrl !== null) headers.push("profile-web-page-url", `${settings.publicUrl}/sub/${key}`);
  return { status: 200, headers, body };
}
