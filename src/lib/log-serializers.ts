// What a request looks like in a log line: method, path and client, with credential-like query
// values and subscription ids (a /sub URL is all a client needs to fetch a user's links) replaced.
const SENSITIVE_QUERY =
  /^(access_?token|token|api_?key|key|password|passwd|secret|signature|sig|auth|code)$/i;

export function redactUrl(url: string): string {
  const queryAt = url.indexOf("?");
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  const safePath = path.replace(/(\/sub\/)[^/]+/i, "$1[redacted]");
  if (queryAt === -1) return safePath;
  const query = url
    .slice(queryAt + 1)
    .split("&")
    .map((pair) => {
      const eq = pair.indexOf("=");
      const name = eq === -1 ? pair : pair.slice(0, eq);
      return eq !== -1 && SENSITIVE_QUERY.test(safeDecode(name)) ? `${name}=[redacted]` : pair;
    })
    .join("&");
  return `${safePath}?${query}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

type LoggedRequest = { method?: string; url?: string; ip?: string; socket?: { remotePort?: number } };

/** pino `req` serializer; the root logger's serializer wins over Fastify's default. */
export function serializeRequest(request: LoggedRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: request.url === undefined ? undefined : redactUrl(request.url),
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
