// GET/HEAD /sub/{user_id} answered from memory before Fastify sees the request: routing, hooks, the
// request and reply objects and the logger cost more than the answer itself. Anything this path does
// not answer (a user not in memory, an uppercase or malformed id, a query string, a client's own
// X-Request-Id) goes on to the Fastify route unchanged, which answers the same bytes (answer.ts).
// Per request it allocates only the answer's strings: the header lists are reused (their text is
// copied into the response's head before it returns), the request's headers are scanned in their raw
// form (IncomingMessage#headers builds an object on first use), request ids count up. It relies on
// no Node.js internal: the head goes through writeHead, the body through end(body) (issue 46: the
// internals that skipped those saved under 5 % of /sub's CPU a request on Node 24, docs/benchmarks/sub.md).
import { randomUUID } from "node:crypto";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { SECURITY_HEADERS } from "../../lib/security-headers.ts";
import { type Format, isFormat } from "../../lib/subscription-formats.ts";
import {
  type AnswerSettings,
  NOT_MODIFIED_HEADERS,
  notModifiedHeaders,
  OK_HEADERS,
  okHeaders,
  type SettingsOkHeaders,
  settingsOkHeaders,
} from "./answer.ts";
import { isBrowser } from "./formats.ts";
import type { SubscriptionsService } from "./subscriptions.service.ts";

const PREFIX = "/sub/";
const FORMAT_QUERY = "format=";

/** The security headers every response carries (as Fastify's onRequest hook sets them), after ours. */
const SECURITY_PAIRS = SECURITY_HEADERS.length / 2;
const OK = okHeaders(2 + SECURITY_PAIRS);
OK[OK_HEADERS] = "x-request-id";
OK[OK_HEADERS + 2] = "content-length";
OK.splice(OK_HEADERS + 4, SECURITY_HEADERS.length, ...SECURITY_HEADERS);
const NOT_MODIFIED = notModifiedHeaders(1 + SECURITY_PAIRS);
NOT_MODIFIED[NOT_MODIFIED_HEADERS] = "x-request-id";
NOT_MODIFIED.splice(NOT_MODIFIED_HEADERS + 2, SECURITY_HEADERS.length, ...SECURITY_HEADERS);

/** Ends a response whose head is written, with `body` (undefined: none, as for HEAD and 304). */
function endWith(response: ServerResponse, body: string | undefined): void {
  if (body === undefined) response.end();
  else response.end(body, "latin1");
}

const HEX_PAIRS = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));
/**
 * X-Request-Id of the answers written here: uuid-shaped, the first 28 characters drawn at random and
 * the last 8 counting up (a new random start after 2^32 ids). Unique within the process (and, by
 * the random part, across instances) like Fastify's randomUUID() ids, for a fraction of their cost.
 */
export class RequestIds {
  #prefix = "";
  #sequence = 0;

  constructor(private readonly random: () => string = randomUUID) {
    this.#restart();
  }

  #restart(): void {
    const seed = this.random();
    this.#prefix = seed.slice(0, 28);
    this.#sequence = Number.parseInt(seed.slice(28), 16);
  }

  next(): string {
    const n = (this.#sequence + 1) >>> 0;
    if (n === 0) this.#restart();
    else this.#sequence = n;
    const s = this.#sequence;
    return `${this.#prefix}${HEX_PAIRS[s >>> 24]}${HEX_PAIRS[(s >>> 16) & 255]}${HEX_PAIRS[(s >>> 8) & 255]}${HEX_PAIRS[s & 255]}`;
  }
}
const requestIds = new RequestIds();

const UUID_ALONE = { length: 36, format: null } as const;
const TOKEN_ALONE = { length: 32, format: null } as const;

/**
 * The URL shapes answered here: /sub/{key}, /sub/{key}/{format} and /sub/{key}?format={format},
 * where key is a lowercase uuid (36) or a sub token (32 hex); anything else is left to Fastify.
 * Returns the key's length and the explicit format (null: none), or undefined.
 */
function parseUrl(url: string): { length: number; format: Format | null } | undefined {
  // Most requests: the key alone. A "/" or "?" inside it fails the key's own parse (hex), so the
  // request goes on to Fastify as it would from the full parse below.
  if (url.length === PREFIX.length + 36) return UUID_ALONE;
  if (url.length === PREFIX.length + 32) return TOKEN_ALONE;
  let end = PREFIX.length;
  while (end < url.length && url.charCodeAt(end) !== 0x2f && url.charCodeAt(end) !== 0x3f) end++;
  const length = end - PREFIX.length;
  if (length !== 36 && length !== 32) return undefined;
  if (end === url.length) return { length, format: null };
  const query = url.indexOf("?", end);
  let format: string | undefined;
  if (url.charCodeAt(end) === 0x2f) {
    format = url.slice(end + 1, query < 0 ? undefined : query);
    if (query >= 0) return undefined;
  } else {
    if (!url.startsWith(FORMAT_QUERY, end + 1)) return undefined;
    format = url.slice(end + 1 + FORMAT_QUERY.length);
  }
  return isFormat(format) ? { length, format } : undefined;
}

/** True when the answer was written; false to let Fastify handle the request. */
export function answerFromMemory(
  subscriptions: SubscriptionsService,
  request: IncomingMessage,
  response: ServerResponse,
): boolean {
  const { method, url } = request;
  if (method !== "GET" && method !== "HEAD") return false;
  if (url === undefined || !url.startsWith(PREFIX) || !subscriptions.isReady) return false;
  const shape = parseUrl(url);
  if (shape === undefined) return false;
  const raw = request.rawHeaders;
  let ifNoneMatch: string | undefined;
  let userAgent: string | undefined;
  let accept: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 12 && name.toLowerCase() === "x-request-id") return false; // Fastify echoes (and checks) it
    if (name.length === 13 && name.toLowerCase() === "if-none-match") {
      // Repeated fields are one list, as IncomingMessage#headers joins them.
      ifNoneMatch = ifNoneMatch === undefined ? raw[i + 1] : `${ifNoneMatch}, ${raw[i + 1]}`;
    } else if (name.length === 10 && name.toLowerCase() === "user-agent") userAgent = raw[i + 1];
    else if (name.length === 6 && name.toLowerCase() === "accept") accept = raw[i + 1];
  }
  const settings = subscriptions.settings;
  let format = shape.format;
  if (format === null) {
    if (isBrowser(accept, userAgent)) return false; // the page: rendered by the route
    format = settings.chooser.byUserAgent(userAgent);
  }
  const address = subscriptions.findKey(url, PREFIX.length, shape.length);
  if (address < 0 || subscriptions.checksDevices(address)) return false; // devices: judged by the route
  subscriptions.noteFetch(address, userAgent); // into preallocated typed arrays: written in batches (fetch-log.ts)
  if (format !== "base64" || subscriptions.hasOwnHeaders(address)) {
    const key = url.slice(PREFIX.length, PREFIX.length + shape.length);
    const answer = subscriptions.answerFormat(address, key, format, ifNoneMatch);
    const headers = answer.headers;
    headers.push("x-request-id", requestIds.next(), ...SECURITY_HEADERS);
    if (answer.body !== undefined) headers.push("content-length", String(answer.body.length)); // a character per byte
    response.writeHead(answer.status, headers); // values an admin may have typed (extras): checked
    endWith(response, method === "GET" ? answer.body : undefined);
    return true;
  }
  if (!settings.isPlain) {
    // Headers from the settings: a list made once per settings, the key's and the record's values written into it.
    const headers = settingsOkFor(settings.answer);
    const body = subscriptions.answerInto(address, ifNoneMatch, headers.list, NOT_MODIFIED);
    if (body === undefined) return notModified(response);
    const key = url.slice(PREFIX.length, PREFIX.length + shape.length);
    subscriptions.fillSettingsValues(headers, address, key);
    const list = headers.list;
    list[headers.end + 1] = requestIds.next();
    list[list.length - 1] = String(body.length); // base64: ASCII
    response.writeHead(200, list); // values an admin may have typed: checked
    endWith(response, method === "GET" ? body : undefined);
    return true;
  }
  const body = subscriptions.answerInto(address, ifNoneMatch, OK, NOT_MODIFIED);
  if (body === undefined) return notModified(response);
  OK[OK_HEADERS + 1] = requestIds.next();
  OK[OK_HEADERS + 3] = String(body.length); // base64: ASCII
  response.writeHead(200, OK);
  endWith(response, method === "GET" ? body : undefined);
  return true;
}

/** The 304 whose values answerInto() wrote into NOT_MODIFIED. */
function notModified(response: ServerResponse): true {
  NOT_MODIFIED[NOT_MODIFIED_HEADERS + 1] = requestIds.next();
  response.writeHead(304, NOT_MODIFIED);
  response.end();
  return true;
}

/** The settings' 200 list (answer.ts), then X-Request-Id, the security headers and Content-Length. */
let settingsOk: SettingsOkHeaders | undefined;
function settingsOkFor(answer: AnswerSettings): SettingsOkHeaders {
  if (settingsOk?.settings === answer) return settingsOk;
  const made = settingsOkHeaders(answer, 2 + SECURITY_PAIRS);
  made.list[made.end] = "x-request-id";
  made.list.splice(made.end + 2, SECURITY_HEADERS.length, ...SECURITY_HEADERS);
  made.list[made.list.length - 2] = "content-length";
  settingsOk = made;
  return made;
}

/** Fastify's request handler behind the fast path (Fastify's serverFactory option). */
export function withCacheFastPath(
  subscriptions: SubscriptionsService,
  fastify: RequestListener,
): RequestListener {
  return (request, response) => {
    if (!answerFromMemory(subscriptions, request, response)) fastify(request, response);
  };
}
