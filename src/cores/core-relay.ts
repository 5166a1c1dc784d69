// The agent's side of the `node` transport: one gRPC channel to the local core's API that passes a
// method path and request bytes through unchanged and returns the answer's bytes, or the core's gRPC
// status as {code, details}, which the panel maps exactly as it maps a direct call's failure.

import { Client, credentials, type ServiceError, status } from "@grpc/grpc-js";
import type { CoreFlavor } from "./core-types.ts";
import { nonZeroStats } from "./stats-scan.ts";
import { v2rayApi } from "./v2ray-api.ts";
import { NEWEST_XRAY_LAYOUT } from "./wire-layout.ts";
import { xrayApiFor } from "./xray-api.ts";

export type RelayAnswer = { ok: true; response: Uint8Array } | { ok: false; code: number; details: string };

/** The method paths a panel may relay: the core API's services of both namespaces, nothing else. */
const ALLOWED_PATH =
  /^\/(?:v2ray\.core|xray)\.app\.(?:proxyman\.command\.HandlerService|stats\.command\.StatsService)\/[A-Za-z]{1,64}$/;

export function isRelayablePath(path: string): boolean {
  return ALLOWED_PATH.test(path);
}

/** The deadline of the agent's calls to its core other than reads with reset. */
export const CORE_CALL_TIMEOUT_MS = 10_000;

export class CoreRelay {
  private readonly client: Client;

  constructor(
    readonly address: string,
    private readonly timeoutMs = CORE_CALL_TIMEOUT_MS,
    /**
     * Deadline of a counter read with reset (harvestCounters): an answer dropped at a deadline is
     * traffic lost, the core having reset its counters, so it is long; never none (no hang).
     */
    readonly resetReadTimeoutMs = 120_000,
  ) {
    // The core's API listens on 127.0.0.1 only (node/base-config.ts): plaintext never leaves the host.
    this.client = new Client(address, credentials.createInsecure(), {
      "grpc.initial_reconnect_backoff_ms": 50,
      "grpc.max_reconnect_backoff_ms": 1000,
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
      "grpc.use_local_subchannel_pool": 1,
    });
  }

  /**
   * `extraTimeoutMs`: time the core needs beyond a small call's deadline (an AddInbound with users
   * inline: the agent allows what the panel allows, flavor-api.ts addInboundExtraMs).
   */
  call(path: string, request: Uint8Array, extraTimeoutMs = 0): Promise<RelayAnswer> {
    if (!isRelayablePath(path)) {
      return Promise.resolve({ ok: false, code: status.UNIMPLEMENTED, details: "not a core API method" });
    }
    return new Promise((resolve) => {
      const done = (error: ServiceError | null, response?: Buffer) => {
        if (error !== null || response === undefined) {
          resolve({ ok: false, code: error?.code ?? status.UNKNOWN, details: error?.details ?? "no answer" });
        } else resolve({ ok: true, response }); // a Buffer is a Uint8Array: no copy
      };
      try {
        this.client.makeUnaryRequest(
          path,
          (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
          (bytes: Buffer) => bytes,
          request,
          { deadline: Date.now() + this.timeoutMs + extraTimeoutMs },
          done,
        );
      } catch (error) {
        resolve({ ok: false, code: status.UNAVAILABLE, details: String(error) });
      }
    });
  }

  /** What a read with reset is allowed beyond the deadline of every call. */
  get resetReadExtraMs(): number {
    return Math.max(0, this.resetReadTimeoutMs - this.timeoutMs);
  }

  close(): void {
    this.client.close();
  }
}

/**
 * The user and inbound counters that are not zero, read with reset (what traffic collection reads),
 * as [name, value] with the int64 value in decimal. A failure before anything was read throws; one
 * after the users' read returns what was read (reset on the core already), never drops it.
 */
export async function harvestCounters(
  relay: CoreRelay,
  flavor: CoreFlavor | null,
): Promise<[string, string][]> {
  const api = flavor === "v2ray" ? v2rayApi : xrayApiFor(NEWEST_XRAY_LAYOUT);
  const out: [string, string][] = [];
  for (const pattern of ["user>>>", "inbound>>>"]) {
    const prepared = api.queryStats(pattern, true);
    const answer = await relay.call(prepared.path, prepared.request, relay.resetReadExtraMs);
    // What an earlier pattern read is reset on the core already: kept, not dropped with the failure.
    if (!answer.ok && out.length > 0) return out;
    if (!answer.ok) throw new Error(`QueryStats failed: ${answer.details}`);
    // Only the counters that moved (stats-scan.ts): no garbage for the thousands that did not.
    for (const stat of nonZeroStats(answer.response)) out.push(stat);
  }
  return out;
}
