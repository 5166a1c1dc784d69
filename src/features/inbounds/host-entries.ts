// An inbound's entries in a subscription (issue 48): with no hosts, the one implicit host (the
// inbound's own link parameters, so no existing link changes); with hosts, one entry per enabled
// host in position order, each the inbound's parameters with the host's address, port, remark, SNI,
// Host header, path, ALPN, fingerprint and security laid over them. SNI and Host are lists of which
// one is chosen per fetch: the layout is compiled once per variant (the longest list's length) and
// a fetch picks a variant, where variant v takes item v mod the list's length. Pure and memoised per
// parameters object: the subscription index shares one object per inbound, so a layout's hosts are
// expanded once, when its templates are compiled, never per request.
import { fillTemplate, type UserValues } from "../../lib/user-values.ts";
import type { Fingerprint, Security, Transport } from "../../links/types.ts";
import { FINGERPRINTS } from "../../links/types.ts";
import type { HostFormat, HostSpec, InboundHosts } from "./host-spec.ts";
import type { LinkParams } from "./link-params.ts";

/** Remark variables that differ per user: an entry with one is filled per request (user-values.ts). */
export const USER_VARIABLES = /\{(?:USERNAME|DATA_LEFT|DAYS_LEFT|EXPIRE_DATE|STATUS)\}/;

const expanded = new WeakMap<LinkParams, (readonly LinkParams[])[]>();

/** How many variants the SNI and Host lists of these parameters' hosts need (1: none has a choice). */
export function hostVariants(params: LinkParams | null): number {
  let variants = 1;
  for (const host of params?.hosts?.hosts ?? [])
    variants = Math.max(variants, host.sni.length, host.host.length);
  return variants;
}

/** The entries of one inbound for a format and variant: the implicit host, or its hosts' entries. */
export function hostEntries(params: LinkParams, format: HostFormat, variant = 0): readonly LinkParams[] {
  if (params.hosts === undefined) return [params];
  let byVariant = expanded.get(params);
  if (byVariant === undefined) {
    byVariant = [];
    expanded.set(params, byVariant);
  }
  let entries = byVariant[variant];
  if (entries === undefined) {
    const hosts = params.hosts;
    entries = hosts.hosts.flatMap((host) =>
      host.followsHealth && !hosts.serverHealthy ? [] : [applyHost(params, host, hosts, variant)],
    );
    byVariant[variant] = entries;
  }
  return entries.some((entry) => entry.excludeFrom?.includes(format))
    ? entries.filter((entry) => !entry.excludeFrom?.includes(format))
    : entries;
}

/** The inbounds' entries in grant order, each with the grant (position in the list) it belongs to. */
export function grantEntries(
  params: readonly (LinkParams | null)[],
  format: HostFormat,
  variant = 0,
): { grant: number; p: LinkParams }[] {
  return params.flatMap((inbound, grant) =>
    inbound === null ? [] : hostEntries(inbound, format, variant).map((p) => ({ grant, p })),
  );
}

function pick(list: readonly string[], variant: number): string | undefined {
  return list.length === 0 ? undefined : list[variant % list.length];
}

function applyHost(params: LinkParams, host: HostSpec, hosts: InboundHosts, variant: number): LinkParams {
  const address = host.address ?? params.host;
  const sni = pick(host.sni, variant);
  const hostHeader = pick(host.host, variant);
  const { hosts: _hosts, ...base } = params;
  const remark = staticRemark(host.remark ?? params.remark, params, hosts.serverName);
  const entry: LinkParams = {
    ...base,
    host: address,
    port: host.port ?? params.port,
    remark,
    transport: transportFor(params.transport, hostHeader, host.path),
    security: securityFor(params.security, host, sni, hostHeader ?? dnsName(address)),
  };
  if (host.excludeFrom.length > 0) entry.excludeFrom = host.excludeFrom;
  if (USER_VARIABLES.test(remark)) entry.userRemark = true;
  if (host.mux !== null) entry.mux = host.mux;
  if (host.fragment !== null) entry.fragment = host.fragment;
  if (host.noise !== null) entry.noise = host.noise;
  return entry;
}

/** The entry with its remark's per-user variables filled (a new object: nothing cached per user). */
export function withRemarkValues(params: LinkParams, values: UserValues | undefined): LinkParams {
  return params.userRemark === true && values !== undefined
    ? { ...params, remark: fillTemplate(params.remark, values) }
    : params;
}

/** The variables every user of the entry shares, filled once. */
function staticRemark(template: string, params: LinkParams, serverName: string): string {
  return template
    .replaceAll("{SERVER}", serverName)
    .replaceAll("{PROTOCOL}", params.protocol)
    .replaceAll("{TRANSPORT}", params.protocol === "shadowsocks" ? "tcp" : params.transport.type);
}

function transportFor(transport: Transport, host: string | undefined, path: string | null): Transport {
  switch (transport.type) {
    case "ws":
    case "httpupgrade":
    case "xhttp": {
      const withHost = host === undefined ? transport : { ...transport, host };
      return path === null ? withHost : { ...withHost, path };
    }
    case "grpc": {
      const withHost = host === undefined ? transport : { ...transport, authority: host };
      return path === null ? withHost : { ...withHost, serviceName: path.replace(/^\//, "") };
    }
    case "tcp": {
      if (transport.http === undefined) return transport;
      return {
        type: "tcp",
        http: {
          ...transport.http,
          ...(host === undefined ? {} : { host: [host] }),
          ...(path === null ? {} : { path: [path] }),
        },
      };
    }
  }
}

function securityFor(
  security: Security,
  host: HostSpec,
  sni: string | undefined,
  fallbackName: string | undefined,
): Security {
  if (host.security === "none") return { type: "none" };
  const fingerprint = FINGERPRINTS.find((name) => name === host.fingerprint) as Fingerprint | undefined;
  if (security.type === "reality") {
    return {
      ...security,
      ...(sni === undefined ? {} : { sni }),
      ...(fingerprint === undefined ? {} : { fingerprint }),
    };
  }
  if (security.type === "none" && host.security !== "tls") return security;
  const tls = security.type === "tls" ? security : { type: "tls" as const };
  const name = sni ?? (security.type === "tls" ? tls.sni : fallbackName);
  const alpn = host.alpn ?? tls.alpn;
  const fp = fingerprint ?? tls.fingerprint;
  return {
    type: "tls",
    ...(name === undefined ? {} : { sni: name }),
    ...(alpn === undefined ? {} : { alpn: [...alpn] }),
    ...(fp === undefined ? {} : { fingerprint: fp }),
    ...(host.allowInsecure ? { allowInsecure: true } : {}),
  };
}

const DNS_NAME = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]*$/i;

/** The address when it is a DNS name (a name to send as SNI), else undefined (an IP literal). */
function dnsName(address: string): string | undefined {
  return DNS_NAME.test(address) ? address : undefined;
}
