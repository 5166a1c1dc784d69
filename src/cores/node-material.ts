// What the panel holds to reach a server's node agent: the panel CA, the panel's client certificate,
// the fingerprints of the agent certificates it accepts, and the base document the agent runs its
// core with. Until a node is enrolled its transport refuses every call with a message saying so.

import { createHash } from "node:crypto";
import { CoreUnavailableError } from "../lib/errors.ts";
import type { CoreTransport } from "./core-transport.ts";

export type NodeMaterial = {
  /** PEM of the panel CA: the agent's certificate must chain to it. */
  ca: string;
  /** PEM of the panel's client certificate and its key (a secret). */
  cert: string;
  key: string;
  /**
   * SHA-256 fingerprints (lowercase hex of the DER) of the agent certificates this server accepts:
   * the enrolled one, and during a renewal the one being rolled in. A re-enrolled or deleted
   * server's old certificate is in no list, so it is refused (that is its revocation).
   */
  agentFingerprints: readonly string[];
  /**
   * The accepted fingerprints as stored now. A transport whose list was read before a renewal swapped
   * the agent's certificate asks once when an agent presents one it does not know, so a call racing the
   * swap is not refused (a certificate in neither list still is). Not part of nodeMaterialHash.
   */
  recheck?: () => Promise<readonly string[]>;
  /** The base document (JSON text) the agent writes its core's config from (node/base-config.ts). */
  baseConfig: string;
};

export function nodeMaterialHash(material: NodeMaterial | undefined): string {
  if (material === undefined) return "unenrolled";
  const canonical = JSON.stringify([
    material.ca,
    material.cert,
    material.key,
    [...material.agentFingerprints].sort(),
    material.baseConfig,
  ]);
  return createHash("sha256").update(canonical).digest("hex").slice(0, 32);
}

/** The transport of a `node` server that has no enrolled agent yet. */
export class UnenrolledTransport implements CoreTransport {
  readonly kind = "node" as const;

  constructor(readonly address: string) {}

  call<T>(): Promise<T> {
    return Promise.reject(
      new CoreUnavailableError(
        `node agent ${this.address} is not enrolled: create a join string with ` +
          "POST /api/servers/{id}/node-enrollment and run `portcullis node join` on the host",
      ),
    );
  }

  close(): void {}
}

/** What the panel and the agent compare to tell whether the agent runs the base document it should. */
export function baseHash(document: unknown): string {
  return createHash("sha256").update(JSON.stringify(document)).digest("hex");
}
