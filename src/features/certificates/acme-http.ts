// acme-client talks through one process-wide axios instance. This gives each issuance its own deadline
// per network call, its own CA trust and cancellation, via an interceptor that reads an AsyncLocalStorage
// scope, plus a directory pre-flight that fails fast and readably where acme-client would retry for 75 s.
import { AsyncLocalStorage } from "node:async_hooks";
import { request as httpRequest } from "node:http";
import { type Agent, request as httpsRequest } from "node:https";
import { axios } from "acme-client";

export type AcmeHttpScope = {
  /** Deadline of each ACME network call (axios `timeout`; a timeout is not retried by acme-client). */
  requestTimeoutMs: number;
  /** Replaces the system roots for the ACME server's TLS certificate when set (private CAs, tests). */
  httpsAgent?: Agent;
  /** Once aborted, every further ACME call fails at once instead of going to the network. */
  signal: AbortSignal;
  /** The latest request sent, to explain a failure acme-client reports without its cause. */
  lastRequest?: { method: string; url: string; startedAtMs: number };
};

const scopes = new AsyncLocalStorage<AcmeHttpScope>();
let isInterceptorInstalled = false;

/** The error thrown instead of a request once the issuance was cancelled or ran past its deadline. */
export class AcmeCancelledError extends Error {}

function installInterceptor(): void {
  if (isInterceptorInstalled) return;
  isInterceptorInstalled = true;
  axios.interceptors.request.use((config) => {
    const scope = scopes.getStore();
    if (scope === undefined) return config;
    // Thrown without an axios `config`, so acme-client's retry interceptor passes it straight through.
    if (scope.signal.aborted) throw new AcmeCancelledError("the issuance was cancelled");
    config.timeout = scope.requestTimeoutMs;
    scope.lastRequest = {
      method: (config.method ?? "get").toUpperCase(),
      url: config.url ?? "",
      startedAtMs: Date.now(),
    };
    if (scope.httpsAgent !== undefined) config.httpsAgent = scope.httpsAgent;
    return config;
  });
}

/** Runs `work` with every acme-client request inside it bound to `scope`. */
export function withAcmeHttpScope<T>(scope: AcmeHttpScope, work: () => Promise<T>): Promise<T> {
  installInterceptor();
  return scopes.run(scope, work);
}

/**
 * acme-client 5.4 loses every request that got no response (a timeout, or network errors after its
 * retries): its interceptor then throws this TypeError instead. The scope still knows the request.
 */
export function isLostResponseCrash(error: unknown): boolean {
  return error instanceof TypeError && error.message.includes("reading 'config'");
}

export function describeLostResponse(scope: AcmeHttpScope): string {
  const last = scope.lastRequest;
  if (last === undefined) return "the ACME server could not be reached";
  const elapsedMs = Date.now() - last.startedAtMs;
  return elapsedMs >= scope.requestTimeoutMs * 0.9
    ? `no answer to ${last.method} ${last.url} within ${scope.requestTimeoutMs} ms`
    : `${last.method} ${last.url} failed: the connection to the ACME server broke repeatedly`;
}

export type DirectoryInfo = { isExternalAccountRequired: boolean };

type DirectoryOptions = Pick<AcmeHttpScope, "requestTimeoutMs" | "httpsAgent">;

/** GETs the ACME directory once, with a hard deadline, and checks it looks like one. */
export function fetchDirectory(directoryUrl: string, options: DirectoryOptions): Promise<DirectoryInfo> {
  const url = new URL(directoryUrl);
  const send = url.protocol === "http:" ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const request = send(url, {
      method: "GET",
      agent: url.protocol === "https:" ? options.httpsAgent : undefined,
    });
    request.setTimeout(options.requestTimeoutMs, () =>
      request.destroy(new Error(`no answer within ${options.requestTimeoutMs} ms`)),
    );
    request.once("error", reject);
    request.once("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.once("error", reject);
      response.once("end", () => {
        try {
          resolve(readDirectory(response.statusCode ?? 0, Buffer.concat(chunks).toString("utf8")));
        } catch (error) {
          reject(error);
        }
      });
    });
    request.end();
  });
}

function readDirectory(status: number, body: string): DirectoryInfo {
  if (status !== 200) throw new Error(`the directory answered HTTP ${status}`);
  let directory: unknown;
  try {
    directory = JSON.parse(body);
  } catch {
    throw new Error("the directory did not answer with JSON");
  }
  if (typeof directory !== "object" || directory === null || !("newOrder" in directory)) {
    throw new Error("the answer is not an ACME directory (no newOrder)");
  }
  const meta = "meta" in directory && typeof directory.meta === "object" ? directory.meta : null;
  const isExternalAccountRequired =
    meta !== null && "externalAccountRequired" in meta && meta.externalAccountRequired === true;
  return { isExternalAccountRequired };
}
