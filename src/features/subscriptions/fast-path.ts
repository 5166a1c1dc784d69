// GET/HEAD /sub/{user_id} answered from memory before Fastify sees the request: routing, hooks, the
// request and reply objects and the logger cost more than the answer itself. Anything this path does
// not answer (a user not in memory, an uppercase or malformed id, a query string, a client's own
// X-Request-Id) goes on to the Fastify route unchanged, which answers the same bytes (answer.ts).
// Per request it allocates only the answer's strings: the header lists are reused (writeHead copies
// them into the response's header text before it returns), the request's headers are scanned in
// their raw form (IncomingMessage#headers builds an object on first use), request ids count up.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { SECURITY_HEADERS } from "../../lib/security-headers.ts";
import { NOT_MODIFIED_HEADERS, notModifiedHeaders, OK_HEADERS, okHeaders } from "./answer.ts";
import type { SubscriptionsService } from "./subscriptions.service.ts";

const PREFIX = "/sub/";
/** "/sub/" and a uuid: the only URL shape answered here. */
const URL_LENGTH = PREFIX.length + 36;

/** The security headers every response carries (as Fastify's onRequest hook sets them), after ours. */
const SECURITY_PAIRS = SECURITY_HEADERS.length / 2;
const OK = okHeaders(2 + SECURITY_PAIRS);
OK[OK_HEADERS] = "x-request-id";
OK[OK_HEADERS + 2] = "content-length";
OK.splice(OK_HEADERS + 4, SECURITY_HEADERS.length, ...SECURITY_HEADERS);
const NOT_MODIFIED = notModifiedHeaders(1 + SECURITY_PAIRS);
NOT_MODIFIED[NOT_MODIFIED_HEADERS] = "x-request-id";
NOT_MODIFIED.splice(NOT_MODIFIED_HEADERS + 2, SECURITY_HEADERS.length, ...SECURITY_HEADERS);

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

/** True when the answer was written; false to let Fastify handle the request. */
export function answerFromMemory(
  subscriptions: SubscriptionsService,
  request: IncomingMessage,
  response: ServerResponse,
): boolean {
  const { method, url } = request;
  if (method !== "GET" && method !== "HEAD") return false;
  if (url === undefined || url.length !== URL_LENGTH || !url.startsWith(PREFIX)) return false;
  const raw = request.rawHeaders;
  let ifNoneMatch: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 12 && name.toLowerCase() === "x-request-id") return false; // Fastify echoes (and checks) it
    if (name.length === 13 && name.toLowerCase() === "if-none-match") {
      // Repeated fields are one list, as IncomingMessage#headers joins them.
      ifNoneMatch = ifNoneMatch === undefined ? raw[i + 1] : `${ifNoneMatch}, ${raw[i + 1]}`;
    }
  }
  const address = subscriptions.find(url, PREFIX.length);
  if (address < 0) return false;
  const body = subscriptions.answerInto(address, ifNoneMatch, OK, NOT_MODIFIED);
  if (body === undefined) {
    NOT_MODIFIED[NOT_MODIFIED_HEADERS + 1] = requestIds.next();
    response.writeHead(304, NOT_MODIFIED);
    response.end();
    return true;
  }
  OK[OK_HEADERS + 1] = requestIds.next();
  OK[OK_HEADERS + 3] = String(body.length); // base64: ASCII
  response.writeHead(200, OK);
  if (method === "GET") response.end(body, "latin1");
  else response.end();
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
