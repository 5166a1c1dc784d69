// GET/HEAD /sub/{user_id} answered from the cache before Fastify sees the request: routing, hooks,
// the request and reply objects and the logger cost more than the cached answer itself. Anything
// this path does not answer (a miss, an uppercase or malformed id, a query string, a client's own
// X-Request-Id) goes on to the Fastify route unchanged, which renders and answers the same bytes.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { SECURITY_HEADERS } from "../../lib/security-headers.ts";
import type { SubscriptionsService } from "./subscriptions.service.ts";

const PREFIX = "/sub/";
/** "/sub/" and a uuid: the only URL shape answered here. */
const URL_LENGTH = PREFIX.length + 36;
/** True when the cached answer was written; false to let Fastify handle the request. */
export function answerFromCache(
  subscriptions: SubscriptionsService,
  request: IncomingMessage,
  response: ServerResponse,
): boolean {
  const { method, url, headers } = request;
  if (method !== "GET" && method !== "HEAD") return false;
  if (url === undefined || url.length !== URL_LENGTH || !url.startsWith(PREFIX)) return false;
  if (headers["x-request-id"] !== undefined) return false; // Fastify echoes (and checks) it
  const cached = subscriptions.cached(url.slice(PREFIX.length), headers["if-none-match"]);
  if (cached === undefined) return false;
  // The list is this response's own: append to it rather than copy it.
  cached.headers.push("x-request-id", randomUUID(), ...SECURITY_HEADERS);
  if (cached.body !== undefined) cached.headers.push("content-length", String(cached.body.length)); // base64: ASCII
  response.writeHead(cached.status, cached.headers);
  if (method === "GET" && cached.body !== undefined) response.end(cached.body, "latin1");
  else response.end();
  return true;
}

/** Fastify's request handler behind the fast path (Fastify's serverFactory option). */
export function withCacheFastPath(
  subscriptions: SubscriptionsService,
  fastify: RequestListener,
): RequestListener {
  return (request, response) => {
    if (!answerFromCache(subscriptions, request, response)) fastify(request, response);
  };
}
