// Headers on every response: no MIME sniffing, no referrer leaving the service (subscription URLs
// are credentials), and a Content-Security-Policy: nothing loads and nothing frames an API answer;
// HTML pages (the API docs) load only their own scripts and styles and cannot be framed.
import type { FastifyReply } from "fastify";

export const CSP_API = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
export const CSP_HTML =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** name, value pairs as Node's writeHead takes them (the /sub fast path appends these). */
// biome-ignore format: name, value pairs
export const SECURITY_HEADERS: readonly string[] = [
  "x-content-type-options", "nosniff",
  "referrer-policy", "no-referrer",
  "content-security-policy", CSP_API,
];

export function applySecurityHeaders(reply: FastifyReply): void {
  for (let i = 0; i + 1 < SECURITY_HEADERS.length; i += 2) {
    reply.header(SECURITY_HEADERS[i] as string, SECURITY_HEADERS[i + 1]);
  }
}

/**
 * onSend: an HTML answer gets the page policy instead of the API one — unless its route set a
 * policy of its own (the dashboard's, with a per-response style nonce).
 */
export function htmlPolicyFor(contentType: unknown, current: unknown): string | undefined {
  const isHtml = typeof contentType === "string" && contentType.startsWith("text/html");
  return isHtml && (current === undefined || current === CSP_API) ? CSP_HTML : undefined;
}
