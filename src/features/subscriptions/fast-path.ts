// GET/HEAD /sub/{user_id} answered from memory before Fastify sees the request: routing, hooks, the
// request and reply objects and the logger cost more than the answer itself. Anything this path does
// not answer (a user not in memory, an uppercase or malformed id, a query string, a client's own
// X-Request-Id) goes on to the Fastify route unchanged, which answers the same bytes (answer.ts).
// Per request it allocates only the answer's strings: the header lists are reused (their text is
// copied into the response's head before it returns), the request's headers are scanned in their raw
// form (IncomingMessage#headers builds an object on first use), request ids count up. The plain
// base64 answers' heads skip writeHead's per-field checks (their values need none), and every body
// sent as a string goes out with its head in one write (head-text.ts). A request without a body is
// marked as read, so Node does not read it to its end after the answer (marksRead).
import { randomUUID } from "node:crypto";
import { IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import { Socket } from "node:net";
import { SECURITY_HEADERS } from "../../lib/security-headers.ts";
import { type Format, isFormat } from "../../lib/subscription-formats.ts";
import {
  NOT_MODIFIED_HEADERS,
  NOT_MODIFIED_VALUES,
  notModifiedHeaders,
  OK_HEADERS,
  OK_VALUES,
  okHeaders,
} from "./answer.ts";
import { isBrowser } from "./formats.ts";
import { endWith, HeadFields } from "./head-text.ts";
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
/** The two lists as heads: what answerInto() fills and the request id change per answer (and the length). */
const OK_HEAD = new HeadFields(200, OK, [...Object.values(OK_VALUES), OK_HEADERS + 1], OK_HEADERS + 2);
const NOT_MODIFIED_HEAD = new HeadFields(
  304,
  NOT_MODIFIED,
  [...Object.values(NOT_MODIFIED_VALUES), NOT_MODIFIED_HEADERS + 1],
  -1,
);

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

type Consuming = { _consuming: boolean };
/**
 * Whether this Node.js lets the fast path mark its answered requests without a body as read. Once a
 * response finishes, Node's server "dumps" the request unless something reads it (`_consuming`):
 * IncomingMessage#_dump() resumes the stream, reads it, emits 'end', destroys it and emits 'close',
 * over three ticks, so that a body's bytes come off the wire. A GET or HEAD without Content-Length
 * or Transfer-Encoding has no body (RFC 9112 §6.3): for it that work pulls nothing, and it is
 * skipped. A request with a body is dumped as ever (fast-path.test.ts sends 100 KB bodies on GETs
 * and a request after each, on one connection). Undocumented, like the head (head-text.ts): only
 * when this Node.js has both the flag (false on a fresh request) and the dump, as Node 20 to 24 do;
 * elsewhere nothing is set and Node dumps every request as it does by default.
 */
export function requestsCanBeMarkedRead(): boolean {
  try {
    const probe = new IncomingMessage(new Socket()) as unknown as Partial<Consuming>;
    const prototype = IncomingMessage.prototype as unknown as { _dump?: unknown };
    return probe._consuming === false && typeof prototype._dump === "function";
  } catch {
    return false;
  }
}

/** Whether the fast path marks bodiless requests read (tests turn it off to check the other way). */
export const marksRead = { on: requestsCanBeMarkedRead() };

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
  /** Whether the request says it has a body (Content-Length or Transfer-Encoding). */
  let framed = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 12 && name.toLowerCase() === "x-request-id") return false; // Fastify echoes (and checks) it
    if (name.length === 13 && name.toLowerCase() === "if-none-match") {
      // Repeated fields are one list, as IncomingMessage#headers joins them.
      ifNoneMatch = ifNoneMatch === undefined ? raw[i + 1] : `${ifNoneMatch}, ${raw[i + 1]}`;
    } else if (name.length === 10 && name.toLowerCase() === "user-agent") userAgent = raw[i + 1];
    else if (name.length === 6 && name.toLowerCase() === "accept") accept = raw[i + 1];
    else if (name.length === 14 && name.toLowerCase() === "content-length") framed = true;
    else if (name.length === 17 && name.toLowerCase() === "transfer-encoding") framed = true;
  }
  const settings = subscriptions.settings;
  let format = shape.format;
  if (format === null) {
    if (isBrowser(accept, userAgent)) return false; // the page: rendered by the route
    format = settings.chooser.byUserAgent(userAgent);
  }
  const address = subscriptions.findKey(url, PREFIX.length, shape.length);
  if (address < 0) return false;
  if (!framed && marksRead.on) (request as unknown as Consuming)._consuming = true; // no body: nothing to dump
  subscriptions.noteFetch(address, userAgent); // into preallocated typed arrays: written in batches (fetch-log.ts)
  if (format !== "base64" || !settings.isPlain || subscriptions.hasOwnHeaders(address)) {
    const key = url.slice(PREFIX.length, PREFIX.length + shape.length);
    const answer = subscriptions.answerFormat(address, key, format, ifNoneMatch);
    const headers = answer.headers;
    headers.push("x-request-id", requestIds.next(), ...SECURITY_HEADERS);
    if (answer.body !== undefined) headers.push("content-length", String(answer.body.length)); // a character per byte
    response.writeHead(answer.status, headers); // values an admin may have typed (extras): checked
    endWith(response, method === "GET" ? answer.body : undefined);
    return true;
  }
  const body = subscriptions.answerInto(address, ifNoneMatch, OK, NOT_MODIFIED);
  if (body === undefined) {
    NOT_MODIFIED[NOT_MODIFIED_HEADERS + 1] = requestIds.next();
    NOT_MODIFIED_HEAD.answer(response, undefined);
    return true;
  }
  OK[OK_HEADERS + 1] = requestIds.next();
  OK[OK_HEADERS + 3] = String(body.length); // base64: ASCII
  OK_HEAD.answer(response, method === "GET" ? body : undefined);
  return true;
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
