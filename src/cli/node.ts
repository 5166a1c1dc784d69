// `portcullis node join '<string>'` and `portcullis node run`: the agent on a proxy host (docs/NODES.md).
import { createPrivateKey, X509Certificate } from "node:crypto";
import { createServer } from "node:net";
import { parseArgs } from "node:util";
import { loadNodeConfig, type NodeConfig } from "../config/node-config.ts";
import { decodeJoinString } from "../lib/node-join.ts";
import { fingerprintOf, makeKeyAndRequest } from "../lib/node-pki.ts";
import { NodeAgent } from "../node/agent.ts";
import { isJoined, writeIdentity } from "../node/identity.ts";
import { CliError } from "./cli-error.ts";

export const usage = `usage: portcullis node join '<join string>' [--dir DIR] [--panel URL]
       portcullis node run [--dir DIR] [--host ADDR] [--port N] [--core PATH] [--core-args "ARGS"]
                           [--core-api-port N] [--traffic-interval-ms N] [--traffic-read-timeout-ms N]

join  makes a key pair here, has its certificate signed by the panel (the join string is single use
      and expires after an hour), and pins the panel's CA.
run   starts the core as a child and serves the panel over mutual TLS (TLS 1.3, both certificates
      checked). Environment: PORTCULLIS_NODE_DIR, _HOST, _PORT, _CORE, _CORE_ARGS, _CORE_API_PORT,
      _TRAFFIC_INTERVAL_MS, _TRAFFIC_READ_TIMEOUT_MS. Defaults: /var/lib/portcullis-node,
      0.0.0.0:2096, xray, 10000, 120000.
`;

const OPTIONS = {
  dir: { type: "string" },
  panel: { type: "string" },
  host: { type: "string" },
  port: { type: "string" },
  core: { type: "string" },
  "core-args": { type: "string" },
  "core-api-port": { type: "string" },
  "traffic-interval-ms": { type: "string" },
  "traffic-read-timeout-ms": { type: "string" },
} as const;

export async function run(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true });
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error), 2);
  }
  const [action, ...rest] = parsed.positionals;
  let config: NodeConfig;
  try {
    config = loadNodeConfig(parsed.values);
  } catch (error) {
    throw new CliError(error instanceof Error ? error.message : String(error), 2);
  }
  if (action === "join" && rest.length === 1) return join(rest[0] ?? "", config, parsed.values.panel);
  if (action === "run" && rest.length === 0) return runAgent(config);
  process.stderr.write(usage);
  return 2;
}

async function join(text: string, config: NodeConfig, panelOverride: string | undefined): Promise<number> {
  const ticket = decodeJoinString(text);
  if (typeof ticket === "string") throw new CliError(ticket, 1);
  const panelUrl = (panelOverride ?? ticket.panelUrl).replace(/\/+$/, "");
  const { keyPem, csrPem } = await makeKeyAndRequest(`portcullis-node ${ticket.serverId}`);
  let response: Response;
  try {
    response = await fetch(`${panelUrl}/api/node-join`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: ticket.token, csr: csrPem }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (error) {
    throw new CliError(
      `the panel at ${panelUrl} did not answer: ${error instanceof Error ? error.message : error}`,
      1,
    );
  }
  const body = (await response.json().catch(() => ({}))) as {
    ca_cert?: unknown;
    cert?: unknown;
    detail?: unknown;
  };
  if (!response.ok) {
    throw new CliError(
      `the panel refused the join (${response.status}): ${String(body.detail ?? "no reason given")}`,
      1,
    );
  }
  if (typeof body.ca_cert !== "string" || typeof body.cert !== "string")
    throw new CliError("the panel's answer has no certificate", 1);
  // The pin: the CA the answer names must be the one the join string was made with.
  if (fingerprintOf(body.ca_cert) !== ticket.caFingerprint) {
    throw new CliError("the panel's CA is not the one the join string names: refusing it", 1);
  }
  const cert = new X509Certificate(body.cert);
  if (
    !cert.verify(new X509Certificate(body.ca_cert).publicKey) ||
    !cert.checkPrivateKey(createPrivateKey(keyPem))
  ) {
    throw new CliError("the certificate the panel returned is not signed by its CA for this key", 1);
  }
  await writeIdentity(config.dir, {
    serverId: ticket.serverId,
    panelUrl,
    caFingerprint: ticket.caFingerprint,
    caPem: body.ca_cert,
    certPem: body.cert,
    keyPem,
  });
  process.stdout.write(
    `joined: this host is server ${ticket.serverId}; start the agent with \`portcullis node run\`\n`,
  );
  return 0;
}

async function runAgent(config: NodeConfig): Promise<number> {
  if (!isJoined(config.dir))
    throw new CliError(`${config.dir} holds no identity: run \`portcullis node join\` first`, 1);
  const log = (message: string, fields: Record<string, unknown> = {}) =>
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), msg: message, ...fields })}\n`);
  const agent = new NodeAgent({
    dir: config.dir,
    host: config.host,
    port: config.port,
    coreBinary: config.coreBinary,
    ...(config.coreArgs === undefined ? {} : { coreArgs: config.coreArgs }),
    coreApiPort: config.coreApiPort === 0 ? await freeLoopbackPort() : config.coreApiPort,
    trafficIntervalMs: config.trafficIntervalMs,
    trafficReadTimeoutMs: config.trafficReadTimeoutMs,
    log,
  });
  await agent.start();
  log("agent listening", { host: config.host, port: agent.port });
  process.stdout.write(`listening ${agent.port}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  await agent.stop();
  return 0;
}

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}
