// A JSON Schema (draft-07) of the sing-box 1.12 configuration as far as subscriptions use it, written
// from sing-box's documentation (sing-box.sagernet.org/configuration: log, dns and the 1.12 typed DNS
// servers, inbound types, outbound vless/vmess/trojan/shadowsocks/selector/urltest/direct, TLS with
// uTLS and REALITY, V2Ray transports, dial fields, route rules with rule actions). Strict where
// Portcullis writes (every outbound it generates and the default document), and it refuses what 1.12
// deprecated or removed: the legacy special outbounds `block` and `dns`, legacy DNS servers (an
// `address` instead of a `type`), direct's `override_address`/`override_port`, geoip/geosite in route.
// The base document an operator saves is checked against it (422 with the JSON path), and so is every
// generated document in the tests.

type Schema = { [key: string]: unknown };

const string: Schema = { type: "string" };
const bool: Schema = { type: "boolean" };
const port: Schema = { type: "integer", minimum: 0, maximum: 65535 };
const duration: Schema = { type: "string", pattern: "^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$" };
const strings: Schema = { type: "array", items: string };
const stringOrStrings: Schema = { anyOf: [string, strings] };

const dialFields: Schema = {
  detour: string,
  bind_interface: string,
  inet4_bind_address: string,
  inet6_bind_address: string,
  routing_mark: { anyOf: [{ type: "integer" }, string] },
  reuse_addr: bool,
  netns: string,
  connect_timeout: duration,
  tcp_fast_open: bool,
  tcp_multi_path: bool,
  udp_fragment: bool,
  domain_resolver: { anyOf: [string, { type: "object" }] },
  network_strategy: { enum: ["default", "hybrid", "fallback"] },
  network_type: strings,
  fallback_network_type: strings,
  fallback_delay: duration,
  domain_strategy: { enum: ["", "prefer_ipv4", "prefer_ipv6", "ipv4_only", "ipv6_only"] },
};

const UTLS_FINGERPRINTS = [
  "chrome",
  "firefox",
  "edge",
  "safari",
  "360",
  "qq",
  "ios",
  "android",
  "random",
  "randomized",
];

const tls: Schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    enabled: bool,
    disable_sni: bool,
    server_name: string,
    insecure: bool,
    alpn: stringOrStrings,
    min_version: string,
    max_version: string,
    cipher_suites: strings,
    curve_preferences: strings,
    certificate: stringOrStrings,
    certificate_path: string,
    certificate_public_key_sha256: strings,
    client_certificate: stringOrStrings,
    client_certificate_path: string,
    client_key: stringOrStrings,
    client_key_path: string,
    fragment: bool,
    fragment_fallback_delay: duration,
    record_fragment: bool,
    ech: {
      type: "object",
      additionalProperties: false,
      properties: { enabled: bool, config: stringOrStrings, config_path: string, query_server_name: string },
    },
    utls: {
      type: "object",
      additionalProperties: false,
      properties: { enabled: bool, fingerprint: { enum: UTLS_FINGERPRINTS } },
    },
    reality: {
      type: "object",
      additionalProperties: false,
      required: ["enabled", "public_key"],
      properties: {
        enabled: bool,
        public_key: { type: "string", pattern: "^[A-Za-z0-9_-]{43}$" },
        short_id: { type: "string", pattern: "^([0-9a-fA-F]{2}){0,8}$" },
      },
    },
  },
};

const headers: Schema = { type: "object", additionalProperties: stringOrStrings };

const transport: Schema = {
  type: "object",
  required: ["type"],
  properties: { type: { enum: ["http", "ws", "quic", "grpc", "httpupgrade"] } },
  allOf: [
    whenType("http", {
      type: stringOrStrings,
      host: stringOrStrings,
      path: string,
      method: string,
      headers,
      idle_timeout: duration,
      ping_timeout: duration,
    }),
    whenType("ws", {
      type: string,
      path: string,
      headers,
      max_early_data: { type: "integer", minimum: 0 },
      early_data_header_name: string,
    }),
    whenType("quic", { type: string }),
    whenType("grpc", {
      type: string,
      service_name: string,
      idle_timeout: duration,
      ping_timeout: duration,
      permit_without_stream: bool,
    }),
    whenType("httpupgrade", { type: string, host: string, path: string, headers }),
  ],
};

const multiplex: Schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    enabled: bool,
    protocol: { enum: ["smux", "yamux", "h2mux"] },
    max_connections: { type: "integer", minimum: 0 },
    min_streams: { type: "integer", minimum: 0 },
    max_streams: { type: "integer", minimum: 0 },
    padding: bool,
    brutal: { type: "object" },
  },
};

const SHADOWSOCKS_METHODS = [
  "2022-blake3-aes-128-gcm",
  "2022-blake3-aes-256-gcm",
  "2022-blake3-chacha20-poly1305",
  "none",
  "aes-128-gcm",
  "aes-192-gcm",
  "aes-256-gcm",
  "chacha20-ietf-poly1305",
  "xchacha20-ietf-poly1305",
  "aes-128-ctr",
  "aes-192-ctr",
  "aes-256-ctr",
  "aes-128-cfb",
  "aes-192-cfb",
  "aes-256-cfb",
  "rc4-md5",
  "chacha20-ietf",
  "xchacha20",
];

const server = { server: string, server_port: port };
const tag = { type: string, tag: string };
const network = { enum: ["tcp", "udp"] };
const packetEncoding = { enum: ["", "packetaddr", "xudp"] };

/** `if type is T then these are the only properties` (plus the required ones). */
function whenType(type: string, properties: Schema, required: string[] = []): Schema {
  return {
    if: { properties: { type: { const: type } }, required: ["type"] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keywords
    then: { additionalProperties: false, required, properties },
  };
}

/** Outbound types sing-box 1.12 has; `block` and `dns` (legacy special outbounds) are not among them. */
const OUTBOUND_TYPES = [
  "direct",
  "socks",
  "http",
  "shadowsocks",
  "vmess",
  "trojan",
  "wireguard",
  "hysteria",
  "vless",
  "shadowtls",
  "tuic",
  "hysteria2",
  "anytls",
  "tor",
  "ssh",
  "selector",
  "urltest",
];

const outbound: Schema = {
  type: "object",
  required: ["type", "tag"],
  properties: { type: { enum: OUTBOUND_TYPES }, tag: { type: "string", minLength: 1 } },
  allOf: [
    whenType(
      "vless",
      {
        ...tag,
        ...server,
        uuid: { type: "string", minLength: 1 },
        flow: { enum: ["xtls-rprx-vision"] },
        network,
        tls,
        packet_encoding: packetEncoding,
        multiplex,
        transport,
        ...dialFields,
      },
      ["server", "server_port", "uuid"],
    ),
    whenType(
      "vmess",
      {
        ...tag,
        ...server,
        uuid: { type: "string", minLength: 1 },
        security: { enum: ["auto", "none", "zero", "aes-128-gcm", "chacha20-poly1305", "aes-128-ctr"] },
        alter_id: { type: "integer", minimum: 0 },
        global_padding: bool,
        authenticated_length: bool,
        network,
        tls,
        packet_encoding: packetEncoding,
        transport,
        multiplex,
        ...dialFields,
      },
      ["server", "server_port", "uuid"],
    ),
    whenType(
      "trojan",
      { ...tag, ...server, password: string, network, tls, multiplex, transport, ...dialFields },
      ["server", "server_port", "password"],
    ),
    whenType(
      "shadowsocks",
      {
        ...tag,
        ...server,
        method: { enum: SHADOWSOCKS_METHODS },
        password: string,
        plugin: string,
        plugin_opts: string,
        network,
        udp_over_tcp: { anyOf: [bool, { type: "object" }] },
        multiplex,
        ...dialFields,
      },
      ["server", "server_port", "method", "password"],
    ),
    whenType(
      "selector",
      {
        ...tag,
        outbounds: { type: "array", items: { type: "string", minLength: 1 }, minItems: 1 },
        default: string,
        interrupt_exist_connections: bool,
      },
      ["outbounds"],
    ),
    whenType(
      "urltest",
      {
        ...tag,
        outbounds: { type: "array", items: { type: "string", minLength: 1 }, minItems: 1 },
        url: string,
        interval: duration,
        tolerance: { type: "integer", minimum: 0 },
        idle_timeout: duration,
        interrupt_exist_connections: bool,
      },
      ["outbounds"],
    ),
    whenType("direct", { ...tag, ...dialFields }),
  ],
};

const DNS_SERVER_TYPES = [
  "local",
  "hosts",
  "tcp",
  "udp",
  "tls",
  "quic",
  "https",
  "h3",
  "dhcp",
  "fakeip",
  "tailscale",
  "resolved",
];

/** 1.12's typed DNS servers; a legacy server (`address`, no `type`) is refused. */
const dnsServer: Schema = {
  type: "object",
  required: ["type", "tag"],
  additionalProperties: false,
  properties: {
    type: { enum: DNS_SERVER_TYPES },
    tag: { type: "string", minLength: 1 },
    server: string,
    server_port: port,
    path: string,
    headers,
    tls,
    prefer_go: bool,
    interface: string,
    inet4_range: string,
    inet6_range: string,
    path_list: strings,
    predefined: { type: "object" },
    endpoint: string,
    accept_default_resolvers: bool,
    service: string,
    accept_default: bool,
    ...dialFields,
  },
};

const RULE_ACTIONS = ["route", "route-options", "reject", "hijack-dns", "sniff", "resolve", "bypass"];

const routeRule: Schema = {
  type: "object",
  properties: {
    action: { enum: RULE_ACTIONS },
    outbound: string,
    geoip: false,
    geosite: false,
    source_geoip: false,
  },
};

const INBOUND_TYPES = [
  "direct",
  "mixed",
  "socks",
  "http",
  "shadowsocks",
  "vmess",
  "trojan",
  "naive",
  "hysteria",
  "shadowtls",
  "tuic",
  "hysteria2",
  "vless",
  "anytls",
  "tun",
  "redirect",
  "tproxy",
];

export const SINGBOX_SCHEMA: Schema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  $id: "https://portcullis.invalid/schemas/sing-box-1.12.json",
  title: "sing-box 1.12 configuration (as Portcullis subscriptions use it)",
  type: "object",
  additionalProperties: false,
  properties: {
    $schema: string,
    log: {
      type: "object",
      additionalProperties: false,
      properties: {
        disabled: bool,
        level: { enum: ["trace", "debug", "info", "warn", "error", "fatal", "panic"] },
        output: string,
        timestamp: bool,
      },
    },
    dns: {
      type: "object",
      additionalProperties: false,
      properties: {
        servers: { type: "array", items: dnsServer },
        rules: { type: "array", items: { type: "object" } },
        final: string,
        strategy: { enum: ["prefer_ipv4", "prefer_ipv6", "ipv4_only", "ipv6_only"] },
        disable_cache: bool,
        disable_expire: bool,
        independent_cache: bool,
        cache_capacity: { type: "integer", minimum: 0 },
        reverse_mapping: bool,
        client_subnet: string,
      },
    },
    ntp: { type: "object" },
    certificate: { type: "object" },
    endpoints: { type: "array", items: { type: "object", required: ["type", "tag"] } },
    inbounds: {
      type: "array",
      items: {
        type: "object",
        required: ["type"],
        properties: { type: { enum: INBOUND_TYPES }, tag: string },
      },
    },
    outbounds: { type: "array", items: outbound },
    route: {
      type: "object",
      additionalProperties: false,
      properties: {
        rules: { type: "array", items: routeRule },
        rule_set: { type: "array", items: { type: "object", required: ["type", "tag"] } },
        final: string,
        auto_detect_interface: bool,
        override_android_vpn: bool,
        default_interface: string,
        default_mark: { type: "integer" },
        default_domain_resolver: { anyOf: [string, { type: "object" }] },
        default_network_strategy: string,
        default_network_type: strings,
        default_fallback_network_type: strings,
        default_fallback_delay: duration,
        find_process: bool,
      },
    },
    services: { type: "array", items: { type: "object" } },
    experimental: { type: "object" },
  },
};

/** Tags a selector/urltest/route/DNS detour names that no outbound has (the document would not start). */
export function singboxDanglingTags(doc: { [key: string]: unknown }): { path: string; tag: string }[] {
  const outbounds = Array.isArray(doc.outbounds) ? (doc.outbounds as { [key: string]: unknown }[]) : [];
  const known = new Set(outbounds.map((o) => o?.tag).filter((t): t is string => typeof t === "string"));
  const dangling: { path: string; tag: string }[] = [];
  outbounds.forEach((o, i) => {
    if (o?.type !== "selector" && o?.type !== "urltest") return;
    const list = Array.isArray(o.outbounds) ? o.outbounds : [];
    list.forEach((name, j) => {
      if (typeof name === "string" && name !== "{{all}}" && !known.has(name)) {
        dangling.push({ path: `/outbounds/${i}/outbounds/${j}`, tag: name });
      }
    });
  });
  const route = doc.route as { final?: unknown; rules?: unknown } | undefined;
  if (typeof route?.final === "string" && !known.has(route.final)) {
    dangling.push({ path: "/route/final", tag: route.final });
  }
  if (Array.isArray(route?.rules)) {
    route.rules.forEach((rule: { outbound?: unknown }, i) => {
      if (typeof rule?.outbound === "string" && !known.has(rule.outbound)) {
        dangling.push({ path: `/route/rules/${i}/outbound`, tag: rule.outbound });
      }
    });
  }
  return dangling;
}
