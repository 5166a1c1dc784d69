// HTTP as an outsider sends it: the request target goes out byte for byte (percent-escapes, dot
// segments, absolute-form targets, invalid bytes), which fetch() would normalise first. One
// connection per request, closed after the answer; every request has a deadline.
import { connect } from "node:net";

export type RawAnswer = { status: number; headers: Record<string, string>; body: string };

export type RawRequest = {
  method?: string;
  target: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs?: number;
};

/** Sends bytes as written (headers and target are not checked or escaped). */
export function rawRequest(port: number, request: RawRequest): Promise<RawAnswer> {
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  const headers: Record<string, string> = {
    host: "127.0.0.1",
    connection: "close",
    ...(body === undefined ? {} : { "content-length": String(body.length) }),
    ...request.headers,
  };
  const head =
    `${request.method ?? "GET"} ${request.target} HTTP/1.1\r\n` +
    Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("") +
    "\r\n";
  return rawBytes(
    port,
    Buffer.concat([Buffer.from(head, "latin1"), body ?? Buffer.alloc(0)]),
    request.timeoutMs,
  );
}

/** Writes `bytes` to a new connection and parses the one response that comes back. */
export function rawBytes(port: number, bytes: Buffer, timeoutMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", (error) => {
      // A reset after the answer arrived is how a server closes after an error; use what came.
      if (chunks.length > 0) return;
      clearTimeout(timer);
      reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(parseResponse(Buffer.concat(chunks)));
      } catch (error) {
        reject(error);
      }
    });
    socket.write(bytes);
  });
}

function parseResponse(raw: Buffer): RawAnswer {
  const text = raw.toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) throw new Error(`incomplete response: ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine = "", ...lines] = text.slice(0, end).split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!Number.isInteger(status)) throw new Error(`bad status line: ${statusLine}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.subarray(Buffer.byteLength(text.slice(0, end + 4), "latin1"));
  if (headers["transfer-encoding"] === "chunked") body = dechunk(body);
  return { status, headers, body: body.toString("utf8") };
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    const lineEnd = body.indexOf("\r\n", at);
    const size = Number.parseInt(body.subarray(at, lineEnd).toString("latin1"), 16);
    if (!(size > 0)) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}
