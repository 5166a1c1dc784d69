// The http-01 side of ACME: a tiny plain-HTTP listener (port 80 in production) that answers the CA's
// GET /.well-known/acme-challenge/<token> from a responder the issuer fills while a challenge is open.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const CHALLENGE_PREFIX = "/.well-known/acme-challenge/";
const TOKEN = /^[A-Za-z0-9_-]+$/;

/** token → key authorization, for the challenges currently open. */
export class Http01Responder {
  readonly #answers = new Map<string, string>();
  #servedCount = 0;

  set(token: string, keyAuthorization: string): void {
    this.#answers.set(token, keyAuthorization);
  }

  delete(token: string): void {
    this.#answers.delete(token);
  }

  /** The key authorization for `token`, counting the answer (tests check the CA really asked). */
  answer(token: string): string | undefined {
    const keyAuthorization = this.#answers.get(token);
    if (keyAuthorization !== undefined) this.#servedCount += 1;
    return keyAuthorization;
  }

  get servedCount(): number {
    return this.#servedCount;
  }
}

export type Http01ServerOptions = { host: string; port: number; responder: Http01Responder };
export type Http01Server = { host: string; port: number; close(): Promise<void> };

function handle(responder: Http01Responder, request: IncomingMessage, response: ServerResponse): void {
  const path = (request.url ?? "").split("?")[0] ?? "";
  const token = path.startsWith(CHALLENGE_PREFIX) ? path.slice(CHALLENGE_PREFIX.length) : "";
  const isRead = request.method === "GET" || request.method === "HEAD";
  const keyAuthorization = isRead && TOKEN.test(token) ? responder.answer(token) : undefined;
  if (keyAuthorization === undefined) {
    response.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found\n");
    return;
  }
  response.writeHead(200, {
    "content-type": "text/plain",
    "content-length": Buffer.byteLength(keyAuthorization),
  });
  response.end(request.method === "HEAD" ? undefined : keyAuthorization);
}

/** Starts listening; port 0 picks a free port (the returned `port` is the real one). */
export function startHttp01Server(options: Http01ServerOptions): Promise<Http01Server> {
  const server = createServer((request, response) => handle(options.responder, request, response));
  server.keepAliveTimeout = 1_000;
  server.requestTimeout = 10_000;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      const { port } = server.address() as AddressInfo;
      const close = () =>
        new Promise<void>((done, fail) => {
          server.close((error) => (error ? fail(error) : done()));
          server.closeAllConnections();
        });
      resolve({ host: options.host, port, close });
    });
  });
}
