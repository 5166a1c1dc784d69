// Node enrollment (the panel's CA is node-authority.ts): one-time join strings,
// signing an agent's key when it joins, what the panel needs to reach an enrolled agent, the agent's
// report, and certificate renewal before expiry (the agent makes the new key; only its request
// travels). Deleting or re-enrolling a server drops the certificates it accepted: its old agent
// certificate is refused from then on.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { DEFAULT_BASE_DOCUMENT, parseBaseDocument } from "../../cores/node-base-config.ts";
import { redactLogLines } from "../../lib/core-log.ts";
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from "../../lib/errors.ts";
import { encodeJoinString } from "../../lib/node-join.ts";
import { certificateFacts, fingerprintOf, signRequest } from "../../lib/node-pki.ts";
import type { ServersService } from "../servers/servers.service.ts";
import { type NodeAuthority, RENEW_BEFORE_MS } from "./node-authority.ts";
import type { NodeAccessLookup, NodesRepository } from "./nodes.repository.ts";

type AgentOnline = { users: { email: string; addresses: { ip: string; last_seen: string }[] }[] };
export type ServerOnline = {
  server_id: string;
  users: { email: string; user_id: string | null; addresses: { ip: string; last_seen: string }[] }[];
};
export type UserOnline = {
  user_id: string;
  addresses: { ip: string; last_seen: string; server_id: string }[];
  unreachable_server_ids: string[];
};

export const JOIN_TTL_MS = 60 * 60_000;
export const AGENT_CERT_DAYS = 90;

export type Enrollment = { join_string: string; command: string; expires_at: string; ca_fingerprint: string };
export type Joined = { server_id: string; ca_cert: string; cert: string };

export class NodesService {
  constructor(
    private readonly nodes: NodesRepository,
    private readonly servers: ServersService,
    /** The panel's CA and client certificate (node-authority.ts; the servers service reads it too). */
    private readonly authority: NodeAuthority,
    private readonly access: NodeAccessLookup,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The source addresses the server's agent saw per user in its window (5 minutes). */
  async serverOnline(serverId: string): Promise<ServerOnline> {
    const link = await this.link(serverId);
    const { users } = await link.json<AgentOnline>("GET", "online");
    const owners = await this.access.usersByEmail(
      serverId,
      users.map((u) => u.email),
    );
    return {
      server_id: serverId,
      users: users.map((u) => ({
        email: u.email,
        user_id: owners.get(u.email) ?? null,
        addresses: u.addresses,
      })),
    };
  }

  /**
   * Every node server's online report with emails resolved to users (the fair-use job's input); a
   * server whose agent cannot be asked is listed in `unreachable` and contributes nothing.
   */
  async fleetOnline(): Promise<{
    sightings: { user_id: string; ip: string; last_seen: string; server_id: string }[];
    unreachable: string[];
  }> {
    const sightings: { user_id: string; ip: string; last_seen: string; server_id: string }[] = [];
    const unreachable: string[] = [];
    await Promise.all(
      (await this.access.nodeServerIds()).map(async (serverId) => {
        try {
          const online = await this.serverOnline(serverId);
          for (const user of online.users) {
            if (user.user_id === null) continue;
            for (const address of user.addresses) {
              sightings.push({
                user_id: user.user_id,
                ip: address.ip,
                last_seen: address.last_seen,
                server_id: serverId,
              });
            }
          }
        } catch {
          unreachable.push(serverId);
        }
      }),
    );
    return { sightings, unreachable: unreachable.sort() };
  }

  /** A user's source addresses on every node server they have access to; an agent that cannot be asked is named. */
  async userOnline(userId: string): Promise<UserOnline> {
    if (!(await this.access.userExists(userId))) throw new NotFoundError("user", userId);
    const grants = await this.access.nodeGrantsOf(userId);
    const addresses: UserOnline["addresses"] = [];
    const unreachable: string[] = [];
    await Promise.all(
      [...grants].map(async ([serverId, emails]) => {
        try {
          const link = await this.link(serverId);
          const { users } = await link.json<AgentOnline>("GET", "online");
          for (const user of users) {
            if (!emails.has(user.email)) continue;
            for (const address of user.addresses) addresses.push({ ...address, server_id: serverId });
          }
        } catch {
          unreachable.push(serverId);
        }
      }),
    );
    addresses.sort((a, b) => b.last_seen.localeCompare(a.last_seen));
    return { user_id: userId, addresses, unreachable_server_ids: unreachable.sort() };
  }

  /** A one-time join string for the server's agent; earlier unused ones stop working. */
  async createEnrollment(serverId: string, panelUrl: string): Promise<Enrollment> {
    const server = await this.servers.get(serverId);
    if (server.connection !== "node") {
      throw new ConflictError(
        `server ${server.name} is reached directly; set connection to node first`,
        "server_not_node",
      );
    }
    const { ca } = await this.authority.get();
    const token = randomBytes(32).toString("base64url");
    const now = this.now();
    const expiresAt = new Date(now.getTime() + JOIN_TTL_MS).toISOString();
    await this.nodes.deleteOpenEnrollments(serverId);
    await this.nodes.insertEnrollment({
      id: randomUUID(),
      serverId,
      tokenHash: hashToken(token),
      expiresAt,
      now: now.toISOString(),
    });
    const caFingerprint = fingerprintOf(ca.certPem);
    const joinString = encodeJoinString({ panelUrl, serverId, token, caFingerprint });
    return {
      join_string: joinString,
      command: `portcullis node join '${joinString}'`,
      expires_at: expiresAt,
      ca_fingerprint: caFingerprint,
    };
  }

  /**
   * The agent's join. The token is checked first (unknown, used or expired: 401), the request is
   * signed next (one that does not verify: 400, and the token stays usable), and only then is the
   * token spent, in the transaction that records the certificate: of two joins racing with one
   * token, exactly one is answered with a certificate, the other 401 like any replay.
   */
  async join(token: string, csrPem: string): Promise<Joined> {
    const now = this.now();
    const tokenHash = hashToken(token);
    const refused = () =>
      new UnauthorizedError("the join string is unknown, already used or expired", "join_token_invalid");
    const serverId = await this.nodes.openEnrollment(tokenHash, now.toISOString());
    if (serverId === undefined) throw refused();
    const { ca } = await this.authority.get();
    let cert: string;
    try {
      cert = await signRequest(csrPem, {
        authority: ca,
        commonName: `portcullis-node ${serverId}`,
        role: "server",
        validityDays: AGENT_CERT_DAYS,
        now,
      });
    } catch (error) {
      const message = error instanceof RangeError ? error.message : "the certificate request does not verify";
      throw new ValidationError(message, [{ path: "body.csr", message }], "csr_invalid");
    }
    const facts = certificateFacts(cert);
    const spent = await this.nodes.spendEnrollment(tokenHash, now.toISOString(), {
      fingerprint: fingerprintOf(cert),
      serial: facts.serial,
      state: "current",
      notAfter: facts.notAfter.toISOString(),
    });
    // Another join spent the token meanwhile (or it expired): this certificate is never accepted.
    if (spent !== serverId) throw refused();
    await this.servers.dropClient(serverId);
    return { server_id: serverId, ca_cert: ca.certPem, cert };
  }

  async baseDocument(serverId: string): Promise<{ document: unknown; is_default: boolean }> {
    const text = await this.servers.nodeBase(serverId);
    return { document: text === null ? DEFAULT_BASE_DOCUMENT : JSON.parse(text), is_default: text === null };
  }

  /** Checked here as the agent checks it (cores/node-base-config.ts); null returns to the default. */
  async setBaseDocument(
    serverId: string,
    document: unknown,
  ): Promise<{ document: unknown; is_default: boolean }> {
    if (document === null) {
      await this.servers.setNodeBase(serverId, null);
    } else {
      const parsed = parseBaseDocument(document);
      if (!parsed.ok) {
        throw new ValidationError(
          "the base document is not accepted",
          parsed.problems.map((p) => ({
            path: `body.document${p.path === "" ? "" : `.${p.path}`}`,
            message: p.message,
          })),
        );
      }
      await this.servers.setNodeBase(serverId, JSON.stringify(parsed.value));
    }
    return this.baseDocument(serverId);
  }

  /** The agent's own report (core flavor, version, uptime, restarts; its certificate). */
  async agentStatus(serverId: string): Promise<Record<string, unknown>> {
    const link = await this.link(serverId);
    return link.json<Record<string, unknown>>("GET", "status");
  }

  /**
   * The core's recent log lines from the agent (its last 200), masked again here: an older agent,
   * or one that masks less, still puts no credential in the answer (lib/core-log.ts).
   */
  async coreLog(serverId: string): Promise<{ server_id: string; lines: string[]; collected_at: string }> {
    const link = await this.link(serverId);
    const { lines } = await link.json<{ lines?: unknown }>("GET", "logs");
    const text = Array.isArray(lines) ? lines.filter((l): l is string => typeof l === "string") : [];
    return { server_id: serverId, lines: redactLogLines(text), collected_at: this.now().toISOString() };
  }

  /**
   * Renews the agent's certificate when less than RENEW_BEFORE_MS is left: the agent makes a key and
   * a request, the panel signs it and records it as pending (accepted alongside the current one),
   * the agent switches to it for new handshakes, and the panel then accepts only the new one.
   */
  async renewIfDue(serverId: string): Promise<boolean> {
    const certificates = await this.nodes.listCertificates(serverId);
    const current = certificates.find((c) => c.state === "current");
    if (current === undefined) return false;
    const now = this.now();
    if (Date.parse(current.notAfter) - now.getTime() > RENEW_BEFORE_MS) return false;
    const link = await this.link(serverId);
    const { csr } = await link.json<{ csr: string }>("POST", "renewal");
    const { ca } = await this.authority.get();
    const cert = await signRequest(csr, {
      authority: ca,
      commonName: `portcullis-node ${serverId}`,
      role: "server",
      validityDays: AGENT_CERT_DAYS,
      now,
    });
    const facts = certificateFacts(cert);
    const fingerprint = fingerprintOf(cert);
    await this.nodes.addPendingCertificate(
      serverId,
      { fingerprint, serial: facts.serial, state: "pending", notAfter: facts.notAfter.toISOString() },
      now.toISOString(),
    );
    await this.servers.dropClient(serverId);
    await (await this.link(serverId)).json("PUT", "renewal", { cert });
    await this.nodes.promoteCertificate(serverId, fingerprint);
    await this.servers.dropClient(serverId);
    return true;
  }

  private async link(serverId: string) {
    const client = await this.servers.clientOf(serverId);
    const link = client.agentLink?.() ?? null;
    if (link === null) {
      throw new ConflictError("this server is not reached through an enrolled node agent", "server_not_node");
    }
    return link;
  }
}

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
