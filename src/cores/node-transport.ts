// The `node` transport: the core client's calls go to the server's Portcullis agent over HTTPS with
// TLS 1.3 and certificates checked both ways — the panel presents its client certificate, and
// accepts only an agent certificate that chains to the panel CA and whose fingerprint the server
// holds (a re-enrolled or deleted server's old certificate is refused). The agent passes the bytes
// to its core and returns the answer or the core's gRPC status, mapped here exactly as a direct
// call's failure is (grpc-errors.ts). Before its first call the transport makes sure the agent runs
// the server's base document.

import { Agent, request } from "node:https";
import type { PeerCertificate } from "node:tls";
import {
  type AppError,
  CoreAuthFailedError,
  CoreError,
  CoreTimeoutError,
  CoreUnavailableError,
} from "../lib/errors.ts";
import { fingerprintOfDer } from "../lib/node-pki.ts";
import { redact } from "../lib/redact.ts";
import type { CoreTransport } from "./core-transport.ts";
import type { PreparedCall } from "./flavor-api.ts";
import { mapGrpcError } from "./grpc-errors.ts";
import { baseHash, type NodeMaterial } from "./node-material.ts";

const DEFAULT_TIMEOUT_MS = 5000;
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

type Answer = { status: number; body: Buffer };

export class NodeTransport implements CoreTransport {
  readonly kind = "node" as const;
  private readonly agent: Agent;
  private readonly timeoutMs: number;
  private readonly host: string;
  private readonly port: number;
  private baseChecked: Promise<void> | null = null;
  /** Requests sent and not settled: close() lets them finish (a renewal swaps the client mid-call). */
  private inFlight = 0;
  private closing = false;
  /** The agent certificates accepted: the material's, replaced only by a recheck of what is stored. */
  private accepted: Set<string>;

  constructor(
    readonly address: string,
    private readonly material: NodeMaterial,
    options: { timeoutMs?: number | undefined } = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
    this.host = match?.[1] ?? address;
    this.port = Number(match?.[2] ?? 443);
    this.accepted = new Set(material.agentFingerprints);
    this.agent = new Agent({
      keepAlive: true,
      maxSockets: 16,
      ca: [material.ca],
      cert: material.cert,
      key: material.key,
      minVersion: "TLSv1.3",
      maxVersion: "TLSv1.3",
      // The chain is checked by TLS against the panel CA; the name is not what identifies an agent
      // (it is reached by IP as often as by name): its certificate's fingerprint is.
      checkServerIdentity: (_host: string, peer: PeerCertificate) => {
        const fingerprint = fingerprintOfDer(peer.raw);
        return this.accepted.has(fingerprint) ? undefined : new UnknownAgentCertificate(fingerprint);
      },
    });
  }

  async call<T>(prepared: PreparedCall<T>, extraSecrets: readonly string[] = []): Promise<T> {
    const context = { address: this.address, method: prepared.method, secrets: extraSecrets };
    await this.ensureBase();
    const answer = await this.send(
      "POST",
      `/v1/core${prepared.path}`,
      prepared.request,
      context,
      prepared.extraTimeoutMs ?? 0,
    );
    if (answer.status === 200) {
      try {
        return prepared.decode(new Uint8Array(answer.body));
      } catch (error) {
        throw mapGrpcError(error, context);
      }
    }
    const failure = parseJson(answer.body) as { grpc_code?: unknown; details?: unknown } | undefined;
    if (answer.status === 502 && typeof failure?.grpc_code === "number") {
      const error = Object.assign(new Error(String(failure.details ?? "")), {
        code: failure.grpc_code,
        details: String(failure.details ?? ""),
      });
      throw mapGrpcError(error, context);
    }
    throw agentRefused(answer, context);
  }

  /** A JSON route of the agent (status, traffic, online, renewal); failures as AppErrors. */
  async json<T>(method: "GET" | "POST" | "PUT", name: string, body?: unknown): Promise<T> {
    const context = { address: this.address, method: name, secrets: [] };
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const answer = await this.send(method, `/v1/${name}`, payload, context);
    if (answer.status !== 200) throw agentRefused(answer, context);
    return parseJson(answer.body) as T;
  }

  /** The agent runs the server's base document: checked once per transport, sent when it differs. */
  private ensureBase(): Promise<void> {
    this.baseChecked ??= (async () => {
      const wanted = JSON.parse(this.material.baseConfig) as unknown;
      const status = await this.json<{ base_sha256?: string }>("GET", "status");
      if (status.base_sha256 !== baseHash(wanted)) await this.json("PUT", "base", wanted);
    })().catch((error: unknown) => {
      this.baseChecked = null;
      throw error;
    });
    return this.baseChecked;
  }

  /**
   * One request; refused at the handshake for a certificate this transport does not know, it asks
   * what is stored now (a renewal may have swapped the agent's certificate since this transport was
   * made) and, when that certificate is accepted there, sends once more. Nothing reached the agent
   * the first time, so the retry cannot apply anything twice.
   */
  private async send(
    method: string,
    path: string,
    body: Uint8Array | undefined,
    context: { address: string; method: string; secrets: readonly string[] },
    extraTimeoutMs = 0,
  ): Promise<Answer> {
    try {
      return await this.sendOnce(method, path, body, context, extraTimeoutMs);
    } catch (error) {
      const unknown = (error as { cause?: unknown }).cause;
      if (!(unknown instanceof UnknownAgentCertificate) || this.material.recheck === undefined) throw error;
      // The stored list unreadable (the database away): the refusal stands, as it was.
      const stored = await this.material.recheck().catch(() => [] as readonly string[]);
      if (!stored.includes(unknown.fingerprint)) throw error;
      this.accepted = new Set(stored);
      return this.sendOnce(method, path, body, context, extraTimeoutMs);
    }
  }

  private sendOnce(
    method: string,
    path: string,
    body: Uint8Array | undefined,
    context: { address: string; method: string; secrets: readonly string[] },
    extraTimeoutMs = 0,
  ): Promise<Answer> {
    const timeoutMs = this.timeoutMs + extraTimeoutMs;
    this.inFlight += 1;
    return new Promise<Answer>((resolve, reject) => {
      const outgoing = request(
        {
          host: this.host,
          port: this.port,
          method,
          path,
          agent: this.agent,
          timeout: timeoutMs,
          headers: {
            "content-type": path.startsWith("/v1/core/") ? "application/octet-stream" : "application/json",
            "content-length": body?.byteLength ?? 0,
          },
        },
        (incoming) => {
          const chunks: Buffer[] = [];
          let size = 0;
          incoming.on("data", (chunk: Buffer) => {
            size += chunk.byteLength;
            if (size > MAX_ANSWER_BYTES) incoming.destroy(new Error("answer too large"));
            else chunks.push(chunk);
          });
          incoming.once("end", () =>
            resolve({ status: incoming.statusCode ?? 0, body: Buffer.concat(chunks) }),
          );
          incoming.once("error", (error) => reject(transportError(error, context)));
        },
      );
      const deadline = setTimeout(() => outgoing.destroy(new DeadlineError()), timeoutMs);
      outgoing.once("close", () => clearTimeout(deadline));
      outgoing.once("timeout", () => outgoing.destroy(new DeadlineError()));
      outgoing.once("error", (error) => reject(transportError(error, context)));
      outgoing.end(
        body === undefined ? undefined : Buffer.from(body.buffer, body.byteOffset, body.byteLength),
      );
    }).finally(() => {
      this.inFlight -= 1;
      if (this.closing && this.inFlight === 0) this.agent.destroy();
    });
  }

  /**
   * No more pooled sockets: idle ones go now, a call in flight finishes on its socket first (every
   * request has its deadline), so replacing the client (a renewal, a re-enrollment) fails no call.
   */
  close(): void {
    this.closing = true;
    if (this.inFlight === 0) this.agent.destroy();
  }
}

class DeadlineError extends Error {}

/** The agent presented a certificate outside the accepted list (checked against the stored one once). */
class UnknownAgentCertificate extends Error {
  constructor(readonly fingerprint: string) {
    super("the agent's certificate is not the one enrolled for this server");
  }
}

function transportError(
  error: Error,
  context: { address: string; method: string; secrets: readonly string[] },
): AppError {
  const where = `node agent ${context.address} ${context.method}`;
  if (error instanceof DeadlineError) return new CoreTimeoutError(`${where}: no answer before the deadline`);
  const code = (error as NodeJS.ErrnoException).code ?? "";
  const text = redact(error.message, context.secrets);
  if (error instanceof UnknownAgentCertificate) {
    // The cause lets send() recheck the stored list; it carries a fingerprint, never key material.
    return Object.assign(new CoreAuthFailedError(`${where}: TLS refused: ${text}`), { cause: error });
  }
  if (
    /enrolled for this server/.test(text) ||
    /CERT|SSL|TLS|ALERT/i.test(code) ||
    /certificate|alert/i.test(text)
  ) {
    return new CoreAuthFailedError(`${where}: TLS refused: ${text}`);
  }
  return new CoreUnavailableError(`${where}: agent unreachable: ${text}`);
}

function agentRefused(
  answer: Answer,
  context: { address: string; method: string; secrets: readonly string[] },
): AppError {
  const said = (parseJson(answer.body) as { error?: unknown } | undefined)?.error;
  const text = redact(
    typeof said === "string" ? said.slice(0, 500) : `HTTP ${answer.status}`,
    context.secrets,
  );
  const where = `node agent ${context.address} ${context.method}`;
  if (answer.status === 403) return new CoreAuthFailedError(`${where}: ${text}`);
  return new CoreError(`${where}: ${text}`);
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    return undefined;
  }
}
