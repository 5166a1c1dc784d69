// The core's config on a node (written by the agent, src/node/supervisor.ts; checked by the panel too): the operator's base document (per server, sent by the panel) plus
// what the agent must own — the API inbound on 127.0.0.1 at a port the agent picks, the API routing
// rule first, stats and the per-user counters, and the access log on stdout where the agent reads it.
// Inbounds are never in the file: the panel sends them over the API, and the agent re-applies them.

/** What the operator may set; anything else is refused, so nothing can move the API or the log. */
export type BaseDocument = {
  log?: { loglevel?: "debug" | "info" | "warning" | "error" | "none" };
  policy?: { levels?: Record<string, Record<string, number | boolean>>; system?: Record<string, boolean> };
  outbounds?: Record<string, unknown>[];
  routing?: { domainStrategy?: string; rules?: Record<string, unknown>[] };
  dns?: Record<string, unknown>;
};

const PRIVATE_RANGES = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "::1/128",
  "fc00::/7",
  "fe80::/10",
] as const;

export const DEFAULT_BASE_DOCUMENT: BaseDocument = {
  log: { loglevel: "warning" },
  policy: {
    levels: { "0": { handshake: 4, connIdle: 300, uplinkOnly: 1, downlinkOnly: 1 } },
    system: {},
  },
  outbounds: [
    { tag: "direct", protocol: "freedom", settings: {} },
    { tag: "blocked", protocol: "blackhole", settings: {} },
  ],
  // Users must not reach the host's own services (or its neighbours') through the proxy. Written as
  // ranges, not geoip:private: a core installed without geoip.dat refuses the whole config.
  routing: {
    domainStrategy: "AsIs",
    rules: [{ type: "field", ip: [...PRIVATE_RANGES], outboundTag: "blocked" }],
  },
};

/** The API inbound's tag on a node: the core client never removes it (API_INBOUND_TAGS). */
export const NODE_API_TAG = "api";
const TOP_KEYS = ["log", "policy", "outbounds", "routing", "dns"] as const;
const LOG_LEVELS = ["debug", "info", "warning", "error", "none"];
const MAX_DEPTH = 12;

export type BaseProblem = { path: string; message: string };

/** Parses and checks a base document (JSON text or value); problems name paths, never values. */
export function parseBaseDocument(
  input: unknown,
): { ok: true; value: BaseDocument } | { ok: false; problems: BaseProblem[] } {
  let value = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch {
      return { ok: false, problems: [{ path: "", message: "is not valid JSON" }] };
    }
  }
  const problems: BaseProblem[] = [];
  if (!isObject(value)) return { ok: false, problems: [{ path: "", message: "must be a JSON object" }] };
  if (depth(value) > MAX_DEPTH) problems.push({ path: "", message: `nests deeper than ${MAX_DEPTH}` });
  for (const key of Object.keys(value)) {
    if (!(TOP_KEYS as readonly string[]).includes(key)) {
      problems.push({
        path: key,
        message: "is not allowed (the agent owns api, stats, inbounds and log files)",
      });
    }
  }
  const { log, policy, outbounds, routing, dns } = value;
  if (log !== undefined) {
    if (!isObject(log) || Object.keys(log).some((k) => k !== "loglevel")) {
      problems.push({ path: "log", message: "may only set loglevel" });
    } else if (log.loglevel !== undefined && !LOG_LEVELS.includes(String(log.loglevel))) {
      problems.push({ path: "log.loglevel", message: `must be one of ${LOG_LEVELS.join(", ")}` });
    }
  }
  if (policy !== undefined && !isObject(policy))
    problems.push({ path: "policy", message: "must be an object" });
  if (dns !== undefined && !isObject(dns)) problems.push({ path: "dns", message: "must be an object" });
  if (outbounds !== undefined) {
    if (!Array.isArray(outbounds) || outbounds.length === 0 || !outbounds.every(isObject)) {
      problems.push({ path: "outbounds", message: "must be a non-empty array of objects" });
    } else {
      outbounds.forEach((outbound, index) => {
        if (outbound.tag === NODE_API_TAG)
          problems.push({ path: `outbounds[${index}].tag`, message: "is the API's tag" });
      });
    }
  }
  if (routing !== undefined) {
    if (
      !isObject(routing) ||
      (routing.rules !== undefined && !(Array.isArray(routing.rules) && routing.rules.every(isObject)))
    ) {
      problems.push({ path: "routing", message: "must be an object whose rules are objects" });
    } else if (Object.keys(routing).some((k) => k !== "rules" && k !== "domainStrategy")) {
      problems.push({ path: "routing", message: "may only set rules and domainStrategy" });
    } else {
      // A rule sending proxy traffic to the API's outbound would open the API to every user.
      (routing.rules as Record<string, unknown>[] | undefined)?.forEach((rule, index) => {
        const names = [
          rule.outboundTag,
          ...(Array.isArray(rule.inboundTag) ? rule.inboundTag : [rule.inboundTag]),
        ];
        if (names.includes(NODE_API_TAG)) {
          problems.push({ path: `routing.rules[${index}]`, message: "must not name the API's tag" });
        }
      });
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: value as BaseDocument };
}

/** The whole core config: the base document with the agent's parts forced in. */
export function coreConfig(base: BaseDocument, api: { port: number }): Record<string, unknown> {
  const policy = base.policy ?? {};
  const levels = { ...(policy.levels ?? {}) };
  for (const key of Object.keys(levels).length === 0 ? ["0"] : Object.keys(levels)) {
    levels[key] = { ...(levels[key] ?? {}), statsUserUplink: true, statsUserDownlink: true };
  }
  return {
    log: { loglevel: base.log?.loglevel ?? "warning", access: "" },
    api: { tag: NODE_API_TAG, services: ["HandlerService", "StatsService"] },
    stats: {},
    policy: {
      levels,
      system: { ...(policy.system ?? {}), statsInboundUplink: true, statsInboundDownlink: true },
    },
    ...(base.dns === undefined ? {} : { dns: base.dns }),
    inbounds: [
      {
        tag: NODE_API_TAG,
        listen: "127.0.0.1",
        port: api.port,
        protocol: "dokodemo-door",
        settings: { address: "127.0.0.1" },
      },
    ],
    outbounds: base.outbounds ?? DEFAULT_BASE_DOCUMENT.outbounds,
    routing: {
      domainStrategy: base.routing?.domainStrategy ?? "AsIs",
      rules: [
        { type: "field", inboundTag: [NODE_API_TAG], outboundTag: NODE_API_TAG },
        ...(base.routing?.rules ?? []),
      ],
    },
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function depth(value: unknown, level = 0): number {
  if (level > MAX_DEPTH || typeof value !== "object" || value === null) return level;
  let max = level;
  for (const child of Object.values(value)) max = Math.max(max, depth(child, level + 1));
  return max;
}
