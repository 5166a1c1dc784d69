// Server use cases: CRUD with hostname/port/credential checks, the connectivity test and stats.
// Reaches cores through the pooled CoreClient interface (cores/), so this file knows no gRPC.
import { randomUUID } from "node:crypto";
import type { CoreClient } from "../../cores/core-client.ts";
import type { CorePool } from "../../cores/core-pool.ts";
import { API_INBOUND_TAGS, type CoreFlavor } from "../../cores/core-types.ts";
import type { NodeMaterial } from "../../cores/node-material.ts";
import { type CoreProfile, layoutFlavor, type WireLayout } from "../../cores/wire-layout.ts";
import { AppError, ConflictError, CoreDownError, NotFoundError, ValidationError } from "../../lib/errors.ts";
import type { Changes } from "../../lib/events.ts";
import type { SecretBox } from "../../lib/secret-box.ts";
import { type ApiCredentials, isHostname, parseApiCredentials } from "./credentials.ts";
import type { ServerPatch, ServerRow, ServersRepository } from "./servers.repository.ts";
import type { Server, ServerCreate, ServerStats, ServerTestResult, ServerUpdate } from "./servers.schemas.ts";
import { aggregateStats } from "./stats.ts";

export interface CertificateLookup {
  exists(id: string): Promise<boolean>;
}

/** How to reach an enrolled node agent (features/nodes, wired in deps.ts); undefined: not enrolled. */
export interface NodeMaterialLookup {
  materialOf(server: Pick<Server, "id">, baseConfig: string | null): Promise<NodeMaterial | undefined>;
}

type PinFields = {
  core?: CoreFlavor;
  wire_layout?: WireLayout | null;
  wire_layout_pinned?: boolean;
  core_capabilities?: null;
};

/** An operator's pin: the layout, its flavor, and capabilities left to be probed. */
function pinned(layout: WireLayout | null | undefined): PinFields {
  if (layout === undefined) return {};
  if (layout === null) return { wire_layout: null, wire_layout_pinned: false, core_capabilities: null };
  return {
    core: layoutFlavor(layout),
    wire_layout: layout,
    wire_layout_pinned: true,
    core_capabilities: null,
  };
}

export type NotifyServer = (type: "server.status_changed", data: Record<string, unknown>) => Promise<void>;

export class ServersService {
  constructor(
    private readonly servers: ServersRepository,
    private readonly secretBox: SecretBox,
    private readonly cores: CorePool,
    private readonly certificates: CertificateLookup,
    private readonly events: Changes,
    private readonly now: () => Date = () => new Date(),
    /** server.status_changed for webhooks and Telegram (deps.ts wires the notifier). */
    private readonly notify: NotifyServer = async () => {},
    private readonly nodes: NodeMaterialLookup = { materialOf: async () => undefined },
  ) {}

  async list(): Promise<Server[]> {
    return (await this.servers.listServers()).map(publicView);
  }

  async get(id: string): Promise<Server> {
    return publicView(await this.servers.getServer(id));
  }

  async create(input: ServerCreate): Promise<Server> {
    checkHost("hostname", input.hostname);
    if (input.grpc_hostname !== undefined) checkHost("grpc_hostname", input.grpc_hostname);
    const name = input.name.trim();
    await this.#checkNameFree(name);
    await this.#checkCertificate(input.default_certificate_id);
    const sealed = input.api_credentials === undefined ? null : this.#seal(input.api_credentials);
    const now = this.now().toISOString();
    const server: Server = {
      id: randomUUID(),
      name,
      hostname: input.hostname,
      grpc_hostname: input.grpc_hostname ?? input.hostname,
      grpc_port: input.grpc_port ?? 2053,
      status: "unknown",
      default_certificate_id: input.default_certificate_id ?? null,
      created_at: now,
      updated_at: now,
      has_credentials: sealed !== null,
      core: null,
      core_version: null,
      wire_layout: null,
      wire_layout_pinned: false,
      core_capabilities: null,
      last_error: null,
      usage_coefficient: input.usage_coefficient ?? 1,
      connection: input.connection ?? "direct",
      ...pinned(input.wire_layout ?? undefined),
    };
    await this.servers.insertServer(server, sealed);
    return server;
  }

  async update(id: string, input: ServerUpdate): Promise<Server> {
    const current = await this.servers.getServer(id);
    const patch: ServerPatch = {};
    if (input.name !== undefined && input.name.trim() !== current.name) {
      await this.#checkNameFree(input.name.trim());
      patch.name = input.name.trim();
    }
    for (const field of ["hostname", "grpc_hostname"] as const) {
      if (input[field] !== undefined) patch[field] = checkHost(field, input[field]);
    }
    if (input.grpc_port !== undefined) patch.grpc_port = input.grpc_port;
    this.#checkTokenFollowsEndpoint(current, patch, input.api_credentials !== undefined);
    if (input.status !== undefined) patch.status = input.status;
    if (input.usage_coefficient !== undefined) patch.usage_coefficient = input.usage_coefficient;
    if (input.connection !== undefined) patch.connection = input.connection;
    if (input.default_certificate_id !== undefined) {
      await this.#checkCertificate(input.default_certificate_id);
      patch.default_certificate_id = input.default_certificate_id;
    }
    if (input.api_credentials !== undefined) {
      patch.api_credentials_sealed =
        input.api_credentials === null ? null : this.#seal(input.api_credentials);
    }
    const isPinChanged =
      input.wire_layout !== undefined &&
      input.wire_layout !== (current.wire_layout_pinned ? current.wire_layout : null);
    if (isPinChanged) Object.assign(patch, pinned(input.wire_layout));
    await this.servers.updateServer(id, patch, this.now().toISOString());
    const addressChanged = patch.grpc_hostname !== undefined || patch.grpc_port !== undefined;
    const isReached = patch.api_credentials_sealed !== undefined || patch.connection !== undefined;
    if (addressChanged || isReached || isPinChanged) this.cores.close(id);
    if (patch.name !== undefined || (patch.hostname !== undefined && patch.hostname !== current.hostname)) {
      await this.events.emit("serverRenamed", id);
    }
    return this.get(id);
  }

  async delete(id: string): Promise<void> {
    await this.servers.getServer(id);
    // Its inbounds come off the core first: best effort, bounded by the core deadline.
    await this.events.emit("serverDeleting", id);
    if (!(await this.servers.deleteServer(id))) throw new NotFoundError("server", id);
    this.cores.close(id);
  }

  /**
   * Health in subscriptions: with `enabled`, servers offline for longer than `minutes` leave /sub
   * (every format, every user); a server back online returns at once (migration 0024's trigger).
   */
  async applySubscriptionHealth(
    enabled: boolean,
    minutes: number,
    at: Date = this.now(),
  ): Promise<{ leftOut: number; back: number }> {
    const cutoff = new Date(at.getTime() - minutes * 60_000).toISOString();
    return this.servers.markLeftOutOfSub(enabled, cutoff);
  }

  /** Never throws for core trouble: the result says what happened, and status follows it. */
  async test(id: string): Promise<ServerTestResult> {
    const server = await this.servers.getServer(id);
    const client = await this.clientFor(server);
    const endpoint = formatEndpoint(server.grpc_hostname, server.grpc_port);
    const started = performance.now();
    try {
      // /test always asks the core again (unless pinned): the operator may just have upgraded it.
      const profile = await client.redetectLayout();
      await client.getSysStats(); // a real round trip even when the layout is pinned
      const latency = Math.round((performance.now() - started) * 10) / 10;
      await this.recordReachable(server.id, profile, client.version);
      return {
        connected: true,
        endpoint,
        core: layoutFlavor(profile.layout),
        core_version: client.version,
        wire_layout: profile.layout,
        core_capabilities: [...profile.capabilities],
        latency_ms: latency,
        error: null,
      };
    } catch (error) {
      const message = error instanceof AppError ? error.message : "unexpected error talking to the core";
      const isDown = error instanceof CoreDownError;
      await this.recordUnreachable(server.id, isDown ? "offline" : "error", message);
      return {
        connected: false,
        endpoint,
        core: server.core,
        core_version: server.core_version,
        wire_layout: server.wire_layout,
        core_capabilities: server.core_capabilities,
        latency_ms: null,
        error: message,
      };
    }
  }

  async stats(id: string): Promise<ServerStats> {
    const server = await this.servers.getServer(id);
    const client = await this.clientFor(server);
    const flavor = await client.detectFlavor();
    const sys = await client.getSysStats();
    const counters = await client.queryStats("", false);
    return {
      server_id: id,
      ...aggregateStats(sys, counters, flavor, API_INBOUND_TAGS),
      collected_at: this.now().toISOString(),
    };
  }

  /** The node's base document (JSON text), or null for the default. */
  async nodeBase(id: string): Promise<string | null> {
    return (await this.servers.getServer(id)).nodeBaseConfig;
  }

  /** A checked base document (or null: the default); the agent gets it on the next call. */
  async setNodeBase(id: string, text: string | null): Promise<void> {
    await this.servers.getServer(id);
    await this.servers.updateServer(id, { node_base_config: text }, this.now().toISOString());
    this.cores.close(id);
  }

  /** The next call builds a new client (a node's certificates changed). */
  async dropClient(id: string): Promise<void> {
    this.cores.close(id);
  }

  async clientOf(id: string): Promise<CoreClient> {
    return this.clientFor(await this.servers.getServer(id));
  }

  /**
   * The pooled client for a server (replaced when its address, connection or credentials change).
   * A `node` server's calls go to its agent at grpc_hostname:grpc_port over mutual TLS.
   */
  async clientFor(server: ServerRow): Promise<CoreClient> {
    const credentials =
      server.sealedCredentials === null
        ? undefined
        : (JSON.parse(this.secretBox.open(server.sealedCredentials)) as ApiCredentials);
    const node =
      server.connection === "node" ? await this.nodes.materialOf(server, server.nodeBaseConfig) : undefined;
    return this.cores.get({
      serverId: server.id,
      address: formatEndpoint(server.grpc_hostname, server.grpc_port),
      connection: server.connection,
      ...(node === undefined ? {} : { node }),
      ...(credentials === undefined ? {} : { credentials }),
      layout: server.wire_layout,
      capabilities: server.core_capabilities,
      isLayoutPinned: server.wire_layout_pinned,
    });
  }

  /** The core answered: online, and what it speaks (a layout probe's result is bookkeeping, not an edit). */
  async recordReachable(id: string, profile: CoreProfile, version: string | null): Promise<void> {
    await this.servers.setStatus(id, {
      status: "online",
      core: layoutFlavor(profile.layout),
      core_version: version,
      wire_layout: profile.layout,
      core_capabilities: JSON.stringify(profile.capabilities),
      last_error: null,
      last_seen_at: this.now().toISOString(),
    });
  }

  async recordUnreachable(id: string, status: "offline" | "error", message: string): Promise<void> {
    await this.servers.updateServer(id, { status, last_error: message }, this.now().toISOString());
  }

  /** What the reconciler's poll saw, when it changed: status bookkeeping, not an edit (updated_at stays). */
  async recordObserved(
    id: string,
    status: "online" | "offline" | "error",
    error: string | null,
  ): Promise<void> {
    const seen = status === "online" ? { last_seen_at: this.now().toISOString() } : {};
    const before = await this.servers.findServer(id);
    await this.servers.setStatus(id, { status, last_error: error, ...seen });
    if (before !== undefined && before.status !== status) {
      await this.notify("server.status_changed", {
        server: { id, name: before.name, status, previous_status: before.status, last_error: error },
      });
    }
  }

  /**
   * A bearer token without a pinned CA or server name is sent to whatever answers at the address;
   * moving the address must not carry it along silently (an admin session, or a stolen one, could
   * point the server at its own listener and read the token from the next call). The request that
   * moves the address must send api_credentials again (the same ones, new ones, or null).
   */
  #checkTokenFollowsEndpoint(current: ServerRow, patch: ServerPatch, resent: boolean): void {
    const moved =
      (patch.grpc_hostname !== undefined && patch.grpc_hostname !== current.grpc_hostname) ||
      (patch.grpc_port !== undefined && patch.grpc_port !== current.grpc_port);
    if (!moved || resent || current.sealedCredentials === null) return;
    const stored = JSON.parse(this.secretBox.open(current.sealedCredentials)) as ApiCredentials;
    if (stored.token === undefined || stored.ca !== undefined || stored.server_name !== undefined) return;
    throw new ConflictError(
      "this server's api_credentials hold a bearer token that is not pinned to a CA or server name; " +
        "send api_credentials again (or null) in the request that changes grpc_hostname or grpc_port",
      "api_credentials_required",
    );
  }

  #seal(text: string): string {
    const parsed = parseApiCredentials(text);
    return this.secretBox.seal(JSON.stringify(parsed));
  }

  async #checkNameFree(name: string): Promise<void> {
    if (await this.servers.findServerByName(name))
      throw new ConflictError(`a server named ${name} exists already`, "server_name_taken");
  }

  async #checkCertificate(id: string | null | undefined): Promise<void> {
    if (id === null || id === undefined) return;
    if (!(await this.certificates.exists(id))) {
      throw new ValidationError(`certificate ${id} does not exist`, [
        { path: "body.default_certificate_id", message: "no such certificate" },
      ]);
    }
  }
}

function checkHost(field: string, value: string): string {
  if (!isHostname(value)) {
    throw new ValidationError(`${field} is not a DNS name or IP address`, [
      { path: `body.${field}`, message: "must be a DNS name or IP address" },
    ]);
  }
  return value;
}

export function formatEndpoint(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

function publicView(server: ServerRow): Server {
  const { sealedCredentials: _, nodeBaseConfig: __, ...rest } = server;
  return rest;
}
