// A user's record turned into the HTTP answer: the body from the layout's template (its links text
// written into a reused buffer, then base64 in one native call: one flat string), the profile headers
// from the name, the traffic totals, the ETag, and 304 Not Modified for a matching If-None-Match. The
// fast path and the Fastify route both answer through here, so their bytes are the same by
// construction. No I/O.

import type { Format } from "../../lib/subscription-formats.ts";
import { base64Of, encodeFinal, latin1Of, STANDARD, TextBuffer } from "./base64.ts";
import type { DocumentBases } from "./document-template.ts";
import {
  announceAt,
  DOWNLOAD,
  EXPIRE,
  FLAG_ANNOUNCE,
  FLAG_PLAIN_DISPOSITION,
  FLAGS,
  NAME,
  NAME_LENGTH,
  readU16,
  TAG,
  TAG_LENGTH,
  TOTAL,
  UPLOAD,
} from "./engine/user-record.ts";
import { CONTENT_TYPES } from "./formats.ts";
import type { HeaderTemplates } from "./header-templates.ts";
import type { Layout } from "./layout-templates.ts";
import { NO_TRAFFIC, TITLE_PREFIX, UPDATE_INTERVAL_HOURS, userinfoOf } from "./subscription.ts";

const CONTENT_TYPE = "text/plain; charset=utf-8";
const UPDATE_INTERVAL = String(UPDATE_INTERVAL_HOURS);
/** Clients and proxies may store a subscription but must ask again (If-None-Match) before using it. */
const CACHE_CONTROL = "no-cache";
/** The links text of the answer being written. */
const text = new TextBuffer(8192);
/** The record's header values of the answer being written (writeValues) and where the first two end. */
const values = new TextBuffer(512);
const valueEnds = new Int32Array(2);
/** Profile-Title: `base64:` and the base64 of `Portcullis – <name>`: the groups wholly in the prefix, */
const TITLE_PREFIX_BYTES = Buffer.from(TITLE_PREFIX, "utf8");
const TITLE_WHOLE = TITLE_PREFIX_BYTES.length - (TITLE_PREFIX_BYTES.length % 3);
const TITLE_HEAD = Buffer.from(
  `base64:${TITLE_PREFIX_BYTES.subarray(0, TITLE_WHOLE).toString("base64")}`,
  "latin1",
);
/** then the prefix's last bytes (0-2) and the name, encoded together to the end. */
const titleRest = new TextBuffer(256);
titleRest.append(TITLE_PREFIX_BYTES.subarray(TITLE_WHOLE));
const TITLE_REST = titleRest.end;
const DISPOSITION_HEAD = Buffer.from('attachment; filename="', "latin1");
const QUOTE = 0x22;

/** Names and values as Node's writeHead takes them: 7 pairs for 200, 3 for 304, then room for more. */
export const OK_HEADERS = 14;
export const NOT_MODIFIED_HEADERS = 6;
/** Where answerInto() writes each answer's own values in the lists: the rest stay as they were made. */
export const OK_VALUES = { userinfo: 3, title: 5, disposition: 9, etag: 11 } as const;
export const NOT_MODIFIED_VALUES = { etag: 1, userinfo: 5 } as const;

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
 * undefined (304). The arrays come from okHeaders()/notModifiedHeaders() and may be reused.
 */
export function answerInto(
  layout: Layout,
  page: Buffer,
  at: number,
  ifNoneMatch: string | undefined,
  ok: string[],
  notModified: string[],
): string | undefined {
  const template = layout.templates.templateFor(variantOf(layout));
  const userinfo = userinfoAt(page, at);
  const own = writeValues("", template.tag, page, at);
  const etag = own.slice(0, valueEnds[0]);
  if (ifNoneMatch !== undefined && matchesAny(ifNoneMatch, etag)) {
    notModified[NOT_MODIFIED_VALUES.etag] = etag;
    notModified[NOT_MODIFIED_VALUES.userinfo] = userinfo;
    return undefined;
  }
  const body = template.renderInto(text, page, at)
    ? base64Of(text.bytes, 0, text.end)
    : template.renderByBuilders(page, at);
  ok[OK_VALUES.userinfo] = userinfo;
  ok[OK_VALUES.title] = own.slice(valueEnds[0], valueEnds[1]);
  ok[OK_VALUES.disposition] = own.slice(valueEnds[1]);
  ok[OK_VALUES.etag] = etag;
  return body;
}

/**
 * The record's own header values, written as bytes into one reused buffer and read back as one
 * string in one native call: ETag (`"` letter layout-tag record-tag `"`), then Profile-Title, then
 * Content-Disposition (the plain one from the name, or the one stored after it); valueEnds says
 * where the first two end, and each value is a slice of the string. Node's header check (a regular
 * expression per value) takes a slice as it is, where a string built by concatenation is first
 * copied flat through V8's runtime; and it is one call into Buffer where there were three.
 */
function writeValues(letter: string, layoutTag: string, page: Buffer, at: number): string {
  const nameStart = at + NAME;
  const nameLength = readU16(page, at + NAME_LENGTH);
  const nameEnd = nameStart + nameLength;
  const plain = ((page[at + FLAGS] as number) & FLAG_PLAIN_DISPOSITION) !== 0;
  const stored = plain ? 0 : readU16(page, nameEnd);
  titleRest.end = TITLE_REST;
  titleRest.reserve(nameLength);
  const rest = titleRest.bytes;
  for (let i = 0; i < nameLength; i++) rest[TITLE_REST + i] = page[nameStart + i] as number;
  const titleBytes = TITLE_HEAD.length + Math.ceil((TITLE_REST + nameLength) / 3) * 4;
  values.end = 0;
  values.reserve(
    2 +
      letter.length +
      layoutTag.length +
      TAG_LENGTH +
      titleBytes +
      DISPOSITION_HEAD.length +
      nameLength +
      1 +
      stored,
  );
  const out = values.bytes;
  let o = 0;
  out[o++] = QUOTE;
  o = writeAscii(letter, out, o);
  o = writeAscii(layoutTag, out, o);
  for (let i = at + TAG; i < at + TAG + TAG_LENGTH; i++) out[o++] = page[i] as number;
  out[o++] = QUOTE;
  valueEnds[0] = o;
  for (let i = 0; i < TITLE_HEAD.length; i++) out[o++] = TITLE_HEAD[i] as number;
  o = encodeFinal(rest, 0, TITLE_REST + nameLength, out, o, STANDARD, true);
  valueEnds[1] = o;
  if (plain) {
    for (let i = 0; i < DISPOSITION_HEAD.length; i++) out[o++] = DISPOSITION_HEAD[i] as number;
    for (let i = nameStart; i < nameEnd; i++) out[o++] = page[i] as number;
    out[o++] = QUOTE;
  } else {
    for (let i = nameEnd + 2; i < nameEnd + 2 + stored; i++) out[o++] = page[i] as number;
  }
  return latin1Of(out, 0, o);
}

/** Writes a string of one byte per character (ASCII here) into out at `o`; returns the end. */
function writeAscii(value: string, out: Uint8Array, o: number): number {
  for (let i = 0; i < value.length; i++) out[o++] = value.charCodeAt(i);
  return o;
}

/** The settings' headers, with the user's own announcement (users.announce) in place of theirs. */
function extrasFor(extras: readonly string[], page: Buffer, at: number): readonly string[] {
  const own = announceAt(page, at);
  if (own === undefined) return extras;
  const out: string[] = [];
  for (let i = 0; i < extras.length; i += 2) {
    if (extras[i] !== "announce") out.push(extras[i] as string, extras[i + 1] as string);
  }
  out.push("announce", `base64:${Buffer.from(own, "utf8").toString("base64")}`);
  return out;
}

/** Whether the record's answer carries headers of its own beyond the fixed list (answerInto cannot write them). */
export function hasOwnHeaders(page: Buffer, at: number): boolean {
  return ((page[at + FLAGS] as number) & FLAG_ANNOUNCE) !== 0;
}

/** Which of the layout's SNI/Host variants this fetch gets (host-entries.ts): one chosen per fetch. */
function variantOf(layout: Layout): number {
  const variants = layout.templates.variants;
  return variants === 1 ? 0 : Math.floor(Math.random() * variants);
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
  /** The public base URL: Profile-Web-Page-Url is it + /sub/{key} (unless webPageUrl is set). */
  publicUrl: string | null;
  /** Profile-Web-Page-Url as the operator set it (header-safe), or null. */
  webPageUrl: string | null;
  /** The operator's headers whose values are templates, compiled (header-templates.ts), names in lower case. */
  templated: HeaderTemplates;
};

/**
 * body: the bytes to send as a latin1 string (a character per byte: base64 is ASCII, the links text
 * and a document their UTF-8 bytes), so `body.length` is the byte count and the fast path sends it
 * as it is (`end(body, "latin1")`). bodyBytes() gives a Buffer.
 */
export type FormatResponse = { status: 200 | 304; headers: string[]; body: string | undefined };

/** The body's bytes as a Buffer (for writers that would encode a string as UTF-8). */
export function bodyBytes(body: string): Buffer {
  return Buffer.from(body, "latin1");
}

/** A letter per format in the ETag, so two formats of one user never share one. */
const ETAG_LETTER: Record<Format, string> = {
  base64: "",
  links: "L",
  mihomo: "M",
  "sing-box": "S",
  "xray-json": "X",
};

/**
 * The 200 list of a base64 answer whose settings add headers, for a record without its own
 * announcement: formatAnswer()'s headers in its order, made once per settings and reused, with
 * `extra` empty pairs after them. answerInto() fills the record's values (OK_VALUES, as in the plain
 * list) and fillSettingsValues() the rest, so the bytes are formatAnswer()'s.
 */
export type SettingsOkHeaders = {
  readonly settings: AnswerSettings;
  readonly list: string[];
  /** Where Profile-Web-Page-Url's value is when it is made from the key (-1: constant or none). */
  readonly keyedWebPage: number;
  /** Where the templated headers start (their names in place). */
  readonly templated: number;
  /** Where the `extra` pairs start. */
  readonly end: number;
};

export function settingsOkHeaders(settings: AnswerSettings, extra: number): SettingsOkHeaders {
  const list = okHeaders();
  list[7] = settings.updateInterval;
  list.push(...settings.extras);
  let keyedWebPage = -1;
  if (settings.webPageUrl !== null) list.push("profile-web-page-url", settings.webPageUrl);
  else if (settings.publicUrl !== null) {
    list.push("profile-web-page-url", "");
    keyedWebPage = list.length - 1;
  }
  const templated = list.length;
  for (const name of settings.templated.names) list.push(name, "");
  const end = list.length;
  for (let i = 0; i < extra; i++) list.push("", "");
  return { settings, list, keyedWebPage, templated, end };
}

/** The values of `headers` that depend on the key and the record beyond answerInto()'s: as formatAnswer() writes them. */
export function fillSettingsValues(headers: SettingsOkHeaders, key: string, page: Buffer, at: number): void {
  const { settings, list } = headers;
  if (headers.keyedWebPage < 0 && settings.templated.length === 0) return;
  const subscriptionUrl = `${settings.publicUrl ?? ""}/sub/${key}`;
  if (headers.keyedWebPage >= 0) list[headers.keyedWebPage] = subscriptionUrl;
  if (settings.templated.length > 0)
    settings.templated.writeInto(list, headers.templated, page, at, Date.now(), subscriptionUrl);
}

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
  const variant = variantOf(layout);
  const document = isDocument ? layout.templates.document(format, settings.bases, variant) : undefined;
  const template = layout.templates.templateFor(variant);
  const own = writeValues(ETAG_LETTER[format], document?.tag ?? template.tag, page, at);
  const etag = own.slice(0, valueEnds[0]);
  if (ifNoneMatch !== undefined && matchesAny(ifNoneMatch, etag)) {
    return {
      status: 304,
      headers: ["etag", etag, "cache-control", CACHE_CONTROL, "subscription-userinfo", userinfo],
      body: undefined,
    };
  }
  let body: string;
  if (document !== undefined) body = document.render(page, at);
  else if (!template.renderInto(text, page, at)) {
    const base64 = template.renderByBuilders(page, at);
    body = format === "links" ? Buffer.from(base64, "base64").toString("latin1") : base64;
  } else if (format === "links") body = latin1Of(text.bytes, 0, text.end);
  else body = base64Of(text.bytes, 0, text.end);
  // biome-ignore format: name, value pairs
  const headers = [
    "content-type", CONTENT_TYPES[format],
    "subscription-userinfo", userinfo,
    "profile-title", own.slice(valueEnds[0], valueEnds[1]),
    "profile-update-interval", settings.updateInterval,
    "content-disposition", own.slice(valueEnds[1]),
    "etag", etag,
    "cache-control", CACHE_CONTROL,
    ...extrasFor(settings.extras, page, at),
  ];
  const subscriptionUrl = `${settings.publicUrl ?? ""}/sub/${key}`;
  if (settings.webPageUrl !== null) headers.push("profile-web-page-url", settings.webPageUrl);
  else if (settings.publicUrl !== null) headers.push("profile-web-page-url", subscriptionUrl);
  if (settings.templated.length > 0)
    settings.templated.pushInto(headers, page, at, Date.now(), subscriptionUrl);
  return { status: 200, headers, body };
}
