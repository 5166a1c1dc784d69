// The panel's node CA and its client certificate (made on first use, keys sealed at rest, opened once
// per process; the client certificate renewed when a third of its life is left), and what the core
// pool needs to reach an enrolled agent (materialOf). The nodes service signs with it; the servers
// service asks it for a node server's material when it connects: both are given this one object.
import { DEFAULT_BASE_DOCUMENT } from "../../cores/node-base-config.ts";
import type { NodeMaterial } from "../../cores/node-material.ts";
import { AppError } from "../../lib/errors.ts";
import {
  certificateFacts,
  createAuthority,
  issueKeyAndCertificate,
  type KeyAndCertificate,
  PANEL_CLIENT_NAME,
} from "../../lib/node-pki.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import type { NodesRepository } from "./nodes.repository.ts";

/** Renewed when less than this is left: a third of its life, so a panel away for weeks still makes it. */
export const RENEW_BEFORE_MS = 30 * 86_400_000;
const PANEL_CERT_DAYS = 365;
const DEFAULT_BASE_TEXT = JSON.stringify(DEFAULT_BASE_DOCUMENT);

export type Authority = { ca: KeyAndCertificate; client: KeyAndCertificate };

export class NodeAuthority {
  #authority: Promise<Authority> | null = null;

  constructor(
    private readonly nodes: NodesRepository,
    private readonly secretBox: SecretBox,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The CA and the panel's client certificate: made once, kept sealed, opened once per process. */
  get(): Promise<Authority> {
    this.#authority ??= this.#load().catch((error: unknown) => {
      this.#authority = null;
      throw error;
    });
    return this.#authority;
  }

  /** What the pool needs to reach the server's agent; undefined until an agent has joined. */
  async materialOf(server: { id: string }, baseConfig: string | null): Promise<NodeMaterial | undefined> {
    const certificates = await this.nodes.listCertificates(server.id);
    if (certificates.length === 0) return undefined;
    const { ca, client } = await this.get();
    return {
      ca: ca.certPem,
      cert: client.certPem,
      key: client.keyPem,
      agentFingerprints: certificates.map((c) => c.fingerprint),
      recheck: async () => (await this.nodes.listCertificates(server.id)).map((c) => c.fingerprint),
      baseConfig: baseConfig ?? DEFAULT_BASE_TEXT,
    };
  }

  async #load(): Promise<Authority> {
    let row = await this.nodes.findAuthority();
    if (row === undefined) {
      const ca = await createAuthority(this.now());
      const client = await this.#issueClient(ca);
      await this.nodes.insertAuthority(
        {
          caCert: ca.certPem,
          caKeySealed: this.secretBox.seal(ca.keyPem),
          clientCert: client.certPem,
          clientKeySealed: this.secretBox.seal(client.keyPem),
        },
        this.now().toISOString(),
      );
      row = await this.nodes.findAuthority();
      if (row === undefined) throw new AppError("internal_error", "the node CA could not be stored");
    }
    const ca = { certPem: row.caCert, keyPem: this.secretBox.open(row.caKeySealed) };
    let client = { certPem: row.clientCert, keyPem: this.secretBox.open(row.clientKeySealed) };
    if (certificateFacts(client.certPem).notAfter.getTime() - this.now().getTime() < RENEW_BEFORE_MS) {
      client = await this.#issueClient(ca);
      await this.nodes.updateClientCertificate(
        client.certPem,
        this.secretBox.seal(client.keyPem),
        this.now().toISOString(),
      );
    }
    return { ca, client };
  }

  #issueClient(ca: KeyAndCertificate): Promise<KeyAndCertificate> {
    return issueKeyAndCertificate({
      authority: ca,
      commonName: PANEL_CLIENT_NAME,
      role: "client",
      validityDays: PANEL_CERT_DAYS,
      now: this.now(),
    });
  }
}
