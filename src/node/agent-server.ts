// The agent's only listener: HTTPS with TLS 1.3 only, a client certificate required and checked
// against the pinned panel CA during the handshake (no certificate, another CA or an expired one
// never gets a request through), and then the panel's name on it checked too. Bodies are bounded,
// every request has a deadline, and no answer carries more than the request asked for.

import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { TLSSocket } from "node:tls";
import { PANEL_CLIENT_NAME } from "../lib/node-pki.ts";

export type AgentTls = { caPem: string; certPem: string; keyPem: string };

export type AgentRoutes = {
  /** POST /v1/core/<grpc method path>: request bytes in, response bytes (or the gRPC status) out. */
  core(
    path: string,
    body: Buffer,
  ): Promise<{ ok: true; response: Uint8Array } | { ok: false; code: number; details: string }>;
  /** GET/POST/PUT /v1/<name>: JSON in and out; a thrown AgentRequestError is its status and message. */
  json: Record<string, (body: unknown, method: string) => Promise<unknown>>;
};

export class AgentRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const CORE_BODY_LIMIT = 16 * 1024 * 1024;
const JSON_BODY_LIMIT = 256 * 1024;

export type AgentServer = {
  port: number;
  /** A renewed certificate: new handshakes use it, open connections keep theirs (no downtime). */
  setIdentity(tls: AgentTls): void;
  close(): Promise<void>;
};

export async function startAgentServer(options: {
  host: string;
  port: number;
  tls: AgentTls;
  routes: AgentRoutes;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}): Promise<AgentServer> {
  const server = createServer(
    {
      ...tlsOptions(options.tls),
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: "TLSv1.3",
      maxVersion: "TLSv1.3",
      // A handshake left half-sent is dropped after 10 s (Node's default holds it for 120 s).
      handshakeTimeout: 10_000,
      requestTimeout: 60_000,
      headersTimeout: 10_000,
      keepAliveTimeout: 30_000,
    },
    (request, response) => {
      void handle(request, response, options.routes).catch((error: unknown) => {
        options.log?.("agent request failed", {
          err: error instanceof Error ? error.message : String(error),
        });
        if (!response.headersSent) send(response, 500, { error: "internal error" });
        else response.destroy();
      });
    },
  );
  // Handshake failures are what an attacker tries first; they are counted, never logged with data.
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address !== null ? address.port : options.port,
    setIdentity: (tls) => server.setSecureContext(tlsOptions(tls)),
    close: () => closeServer(server),
  };
}

function tlsOptions(tls: AgentTls) {
  return { ca: [tls.caPem], cert: tls.certPem, key: tls.keyPem };
}

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  routes: AgentRoutes,
): Promise<void> {
  // The CA signed the agents' certificates too: only the panel's client certificate may call.
  if (!isPanel(request.socket as TLSSocket)) {
    send(response, 403, { error: "only the panel may call this agent" });
    return;
  }
  const url = request.url ?? "";
  if (request.method === "POST" && url.startsWith("/v1/core/")) {
    const body = await readBody(request, CORE_BODY_LIMIT);
    if (body === undefined) return void send(response, 413, { error: "body too large" });
    const answer = await routes.core(url.slice("/v1/core".length), body);
    if (answer.ok) {
      response.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": answer.response.byteLength,
      });
      response.end(answer.response);
    } else send(response, 502, { grpc_code: answer.code, details: answer.details });
    return;
  }
  const name = /^\/v1\/([a-z-]{1,32})$/.exec(url)?.[1];
  const route = name === undefined ? undefined : routes.json[name];
  if (route === undefined) return void send(response, 404, { error: "no such route" });
  const raw = await readBody(request, JSON_BODY_LIMIT);
  if (raw === undefined) return void send(response, 413, { error: "body too large" });
  let body: unknown = null;
  if (raw.byteLength > 0) {
    try {
      body = JSON.parse(raw.toString("utf8"));
    } catch {
      return void send(response, 400, { error: "body is not JSON" });
    }
  }
  try {
    send(response, 200, await route(body, request.method ?? "GET"));
  } catch (error) {
    if (!(error instanceof AgentRequestError)) throw error;
    send(response, error.status, { error: error.message });
  }
}

/**
 * The connections whose peer is the panel. The certificate is fixed at the handshake (TLS 1.3 has no
 * renegotiation), so it is read once per connection: getPeerCertificate() builds a new object from the
 * certificate on every call, and a grant's keep-alive connections carry thousands of requests each
 * (6 % of the agent's main thread in bench:node's push of 100,000 users).
 */
const panelSockets = new WeakMap<TLSSocket, boolean>();

function isPanel(socket: TLSSocket): boolean {
  let panel = panelSockets.get(socket);
  if (panel === undefined) {
    panel = socket.authorized && socket.getPeerCertificate()?.subject?.CN === PANEL_CLIENT_NAME;
    panelSockets.set(socket, panel);
  }
  return panel;
}

function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        resolve(undefined);
        request.destroy();
      } else chunks.push(chunk);
    });
    request.once("end", () => resolve(Buffer.concat(chunks)));
    request.once("error", reject);
  });
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body ?? null);
  response.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
  });
  response.end(text);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
