// Settings of `portcullis node run|join` (the agent on a proxy host): flags first, then the
// environment (the systemd unit sets these), then defaults. Checked once; a bad value is one line.
export type NodeConfig = {
  /** State: the pinned panel CA, the agent's key and certificate, the last desired state, traffic not yet delivered. */
  dir: string;
  /** Where the panel reaches the agent. */
  host: string;
  port: number;
  /** The core binary (xray or v2ray) and its arguments (`{config}` is the config file). */
  coreBinary: string;
  coreArgs: string[] | undefined;
  /** The core API's port on 127.0.0.1; 0: a free one. */
  coreApiPort: number;
  /** How often the agent reads the core's traffic counters into its journal. */
  trafficIntervalMs: number;
  /**
   * Deadline of a counter read with reset (not the 10 s of other core calls: an answer dropped after
   * the core reset its counters is traffic lost). At least those 10 s.
   */
  trafficReadTimeoutMs: number;
};

type Env = Record<string, string | undefined>;

export function loadNodeConfig(
  flags: Record<string, string | undefined>,
  env: Env = process.env,
): NodeConfig {
  const pick = (flag: string, name: string) => flags[flag] ?? env[name];
  const problems: string[] = [];
  const integer = (value: string | undefined, fallback: number, what: string, min: number, max: number) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) problems.push(`${what} must be an integer ${min}-${max}`);
    return n;
  };
  const args = pick("core-args", "PORTCULLIS_NODE_CORE_ARGS");
  const config: NodeConfig = {
    dir: pick("dir", "PORTCULLIS_NODE_DIR") ?? "/var/lib/portcullis-node",
    host: pick("host", "PORTCULLIS_NODE_HOST") ?? "0.0.0.0",
    port: integer(pick("port", "PORTCULLIS_NODE_PORT"), 2096, "port", 0, 65535),
    coreBinary: pick("core", "PORTCULLIS_NODE_CORE") ?? "xray",
    coreArgs: args === undefined ? undefined : args.split(" ").filter((a) => a !== ""),
    coreApiPort: integer(
      pick("core-api-port", "PORTCULLIS_NODE_CORE_API_PORT"),
      0,
      "core API port",
      0,
      65535,
    ),
    trafficIntervalMs: integer(
      pick("traffic-interval-ms", "PORTCULLIS_NODE_TRAFFIC_INTERVAL_MS"),
      10_000,
      "traffic interval",
      200,
      600_000,
    ),
    trafficReadTimeoutMs: integer(
      pick("traffic-read-timeout-ms", "PORTCULLIS_NODE_TRAFFIC_READ_TIMEOUT_MS"),
      120_000,
      "traffic read timeout",
      10_000,
      3_600_000,
    ),
  };
  if (problems.length > 0) throw new RangeError(problems.join("; "));
  return config;
}
