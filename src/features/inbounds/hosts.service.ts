// An inbound's hosts (issue 48): list, create, update, delete, reorder. A host is checked against its
// inbound before it is stored: the security override must make sense for the inbound (no TLS or plain
// override of REALITY, no TLS in front of Shadowsocks, SNI only where TLS or REALITY is spoken), and
// the entry it gives must build as a link (the same builders /sub runs), so nothing stored can make
// a subscription drop an entry.
import { randomUUID } from "node:crypto";
import { type ErrorDetail, UnprocessableError } from "../../lib/errors.ts";
import { linkShape } from "../../links/build.ts";
import { InvalidLinkTargetError } from "../../links/uri.ts";
import { hostEntries } from "./host-entries.ts";
import type { HostSpec } from "./host-spec.ts";
import { columnsOf, type HostsRepository, type StoredHost } from "./hosts.repository.ts";
import type { Host, HostCreate, HostUpdate } from "./hosts.schemas.ts";
import type { InboundsRepository } from "./inbounds.repository.ts";
import { type LinkParams, linkTargetOf } from "./link-params.ts";

/** At most this many hosts per inbound. */
export const MAX_HOSTS = 100;
const PROBE_CREDENTIAL = "0f1e2d3c-4b5a-4697-8877-66554433aa11";

const DEFAULTS: HostSpec & { isDisabled: boolean } = {
  address: null,
  port: null,
  remark: null,
  sni: [],
  host: [],
  path: null,
  alpn: null,
  fingerprint: null,
  security: "inbound",
  allowInsecure: false,
  mux: null,
  fragment: null,
  noise: null,
  excludeFrom: [],
  followsHealth: false,
  isDisabled: false,
};

export class HostsService {
  constructor(
    private readonly hosts: HostsRepository,
    private readonly inbounds: InboundsRepository,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(serverId: string, inboundId: string): Promise<Host[]> {
    await this.inbounds.getInbound(serverId, inboundId);
    return (await this.hosts.listHosts(inboundId)).map(view);
  }

  async get(serverId: string, inboundId: string, id: string): Promise<Host> {
    await this.inbounds.getInbound(serverId, inboundId);
    return view(await this.hosts.getHost(inboundId, id));
  }

  async create(serverId: string, inboundId: string, input: HostCreate): Promise<Host> {
    const inbound = await this.inbounds.getInbound(serverId, inboundId);
    const existing = await this.hosts.listHosts(inboundId);
    if (existing.length >= MAX_HOSTS) {
      throw new UnprocessableError(`an inbound has at most ${MAX_HOSTS} hosts`, [], "host_invalid");
    }
    const host = { ...DEFAULTS, ...specOf(input) };
    checkHost(inbound.link_params, host);
    const stored = await this.hosts.insertHost(inboundId, randomUUID(), columnsOf(host), this.#at());
    return view(stored);
  }

  async update(serverId: string, inboundId: string, id: string, input: HostUpdate): Promise<Host> {
    const inbound = await this.inbounds.getInbound(serverId, inboundId);
    const current = await this.hosts.getHost(inboundId, id);
    const host = { ...current, ...specOf(input) };
    checkHost(inbound.link_params, host);
    return view(await this.hosts.updateHost(inboundId, id, columnsOf(host), this.#at()));
  }

  async delete(serverId: string, inboundId: string, id: string): Promise<void> {
    await this.inbounds.getInbound(serverId, inboundId);
    await this.hosts.deleteHost(inboundId, id);
  }

  async reorder(serverId: string, inboundId: string, ids: readonly string[]): Promise<Host[]> {
    await this.inbounds.getInbound(serverId, inboundId);
    if (!(await this.hosts.reorder(inboundId, ids, this.#at()))) {
      throw new UnprocessableError(
        "ids must name every host of the inbound once (list the hosts again: they changed)",
        [{ path: "body.ids", message: "not the inbound's hosts" }],
        "host_invalid",
      );
    }
    return (await this.hosts.listHosts(inboundId)).map(view);
  }

  #at(): string {
    return this.now().toISOString();
  }
}

/** The API's fields present in the request, as a HostSpec part. */
function specOf(input: HostCreate): Partial<HostSpec & { isDisabled: boolean }> {
  const spec: Partial<HostSpec & { isDisabled: boolean }> = {};
  if (input.address !== undefined) spec.address = input.address;
  if (input.port !== undefined) spec.port = input.port;
  if (input.remark !== undefined) spec.remark = input.remark;
  if (input.sni !== undefined) spec.sni = input.sni;
  if (input.host !== undefined) spec.host = input.host;
  if (input.path !== undefined) spec.path = input.path;
  if (input.alpn !== undefined) spec.alpn = input.alpn;
  if (input.fingerprint !== undefined) spec.fingerprint = input.fingerprint;
  if (input.security !== undefined) spec.security = input.security;
  if (input.allow_insecure !== undefined) spec.allowInsecure = input.allow_insecure;
  if (input.mux !== undefined) spec.mux = input.mux;
  if (input.fragment !== undefined) spec.fragment = input.fragment;
  if (input.noise !== undefined) spec.noise = input.noise;
  if (input.is_disabled !== undefined) spec.isDisabled = input.is_disabled;
  if (input.exclude_from !== undefined) spec.excludeFrom = input.exclude_from;
  if (input.follows_health !== undefined) spec.followsHealth = input.follows_health;
  return spec;
}

/** Refuses (422 host_invalid) a host that does not fit its inbound or gives no link. */
export function checkHost(inbound: LinkParams, host: HostSpec): void {
  const problems: ErrorDetail[] = [];
  const security = inbound.security.type;
  if (security === "reality" && host.security !== "inbound") {
    problems.push({ path: "body.security", message: "a REALITY inbound keeps its own security" });
  }
  if (inbound.protocol === "shadowsocks" && host.security === "tls") {
    problems.push({ path: "body.security", message: "Shadowsocks links carry no TLS" });
  }
  const speaksTls = host.security === "tls" || (host.security === "inbound" && security !== "none");
  if (!speaksTls) {
    for (const field of ["sni", "alpn", "fingerprint"] as const) {
      const value = host[field];
      if (value !== null && value.length > 0) {
        problems.push({ path: `body.${field}`, message: "only where the entry speaks TLS or REALITY" });
      }
    }
    if (host.allowInsecure) problems.push({ path: "body.allow_insecure", message: "only with TLS" });
  }
  if (problems.length === 0) {
    const params: LinkParams = { ...inbound, hosts: { serverName: "", serverHealthy: true, hosts: [host] } };
    for (let variant = 0; variant < Math.max(1, host.sni.length, host.host.length); variant++) {
      for (const entry of hostEntries(params, "links", variant)) {
        try {
          linkShape(linkTargetOf(entry, PROBE_CREDENTIAL));
        } catch (error) {
          if (!(error instanceof InvalidLinkTargetError)) throw error;
          problems.push({ path: "body", message: `the entry gives no link: ${error.message}` });
        }
      }
    }
  }
  if (problems.length > 0) {
    throw new UnprocessableError(
      `the host does not fit its inbound: ${problems.map((p) => `${p.path} ${p.message}`).join("; ")}`,
      problems,
      "host_invalid",
    );
  }
}

function view(host: StoredHost): Host {
  return {
    id: host.id,
    inbound_id: host.inboundId,
    position: host.position,
    address: host.address,
    port: host.port,
    remark: host.remark,
    sni: [...host.sni],
    host: [...host.host],
    path: host.path,
    alpn: host.alpn === null ? null : ([...host.alpn] as Host["alpn"]),
    fingerprint: host.fingerprint as Host["fingerprint"],
    security: host.security,
    allow_insecure: host.allowInsecure,
    mux: host.mux,
    fragment: host.fragment,
    noise: host.noise === null ? null : [...host.noise],
    is_disabled: host.isDisabled,
    exclude_from: [...host.excludeFrom],
    follows_health: host.followsHealth,
    created_at: host.createdAt,
    updated_at: host.updatedAt,
  };
}
