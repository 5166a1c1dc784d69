// Real V2Ray 4.34 processes for tests: a server with the gRPC API (probe §2), client processes
// with socks inbounds, a tiny SOCKS5 fetcher and loopback HTTP server to carry real traffic.
// Every process and temp dir is removed by the cleanup hook the caller passes (t.after / after).

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ApiCredentials } from "../../src/cores/api-credentials.ts";
import { GrpcCoreClient } from "../../src/cores/grpc-core-client.ts";
import { waitFor } from "./poll.ts";
import { freePort } from "./ports.ts";

export type Cleanup = (fn: () => unknown) => void;
export const API_TAG = "api-in";

/** Suite-level cleanups: `const stack = new CleanupStack(); after(() => stack.run());` then pass `stack.add`. */
export class CleanupStack {
  private readonly fns: (() => unknown)[] = [];
  readonly add: Cleanup = (fn) => {
    this.fns.push(fn);
  };
  /** Runs every cleanup, newest first, even when one throws; then throws what failed. */
  async run(): Promise<void> {
    const errors: unknown[] = [];
    for (const fn of this.fns.splice(0).reverse()) {
      try {
        await fn();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, "cleanup failed");
  }
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

export function tempDir(cleanup: Cleanup): string {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-v2ray-"));
  cleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export type Cert = { certPath: string; keyPath: string; certPem: string; keyPem: string };

/** A self-signed certificate for localhost / 127.0.0.1, made by openssl. */
export function makeCert(dir: string, name: string): Cert {
  const certPath = join(dir, `${name}.crt`);
  const keyPath = join(dir, `${name}.key`);
  execFileSync(
    "openssl",
    [
      ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"],
      ...["-keyout", keyPath, "-out", certPath, "-subj", "/CN=localhost"],
      ...["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
    ],
    { stdio: "ignore" },
  );
  return {
    certPath,
    keyPath,
    certPem: readFileSync(certPath, "utf8"),
    keyPem: readFileSync(keyPath, "utf8"),
  };
}

/** Whether the process exists and is not a zombie (probe §11 item 14: kill -0 is not enough). */
export function isProcessAlive(child: ChildProcess): boolean {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return false;
  try {
    const stat = execFileSync("ps", ["-o", "stat=", "-p", String(child.pid)], { encoding: "utf8" }).trim();
    return stat !== "" && !stat.startsWith("Z");
  } catch {
    return false;
  }
}

function spawnV2ray(configPath: string, logPath: string): ChildProcess {
  return spawnTracked("v2ray", ["-config", configPath], logPath);
}

function spawnTracked(command: string, args: string[], logPath: string): ChildProcess {
  const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
  running.add(child);
  child.once("exit", () => running.delete(child));
  child.stderr?.on("data", (chunk: Buffer) => writeFileSync(logPath, chunk, { flag: "a" }));
  return child;
}

async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill(signal);
  await exited;
}

function serverConfig(apiPort: number, dir: string, tls: Cert | undefined): object {
  const apiInbound = {
    tag: API_TAG,
    listen: "127.0.0.1",
    port: apiPort,
    protocol: "dokodemo-door",
    settings: { address: "127.0.0.1" },
    ...(tls === undefined
      ? {}
      : {
          streamSettings: {
            security: "tls",
            tlsSettings: {
              alpn: ["h2"],
              certificates: [{ certificateFile: tls.certPath, keyFile: tls.keyPath }],
            },
          },
        }),
  };
  return {
    log: { loglevel: "warning", error: join(dir, "server-error.log") },
    api: { tag: "api", services: ["HandlerService", "StatsService", "LoggerService"] },
    stats: {},
    policy: {
      levels: { "0": { statsUserUplink: true, statsUserDownlink: true } },
      system: {
        statsInboundUplink: true,
        statsInboundDownlink: true,
        statsOutboundUplink: true,
        statsOutboundDownlink: true,
      },
    },
    inbounds: [apiInbound],
    outbounds: [{ tag: "direct", protocol: "freedom", settings: {} }],
    routing: { rules: [{ type: "field", inboundTag: [API_TAG], outboundTag: "api" }] },
  };
}

export type V2rayServer = {
  apiPort: number;
  apiAddress: string;
  /** What a client needs to reach a TLS API (CA + server name); undefined for plaintext. */
  apiCredentials: ApiCredentials | undefined;
  dir: string;
  pid(): number;
  isAlive(): boolean;
  kill(signal?: NodeJS.Signals): Promise<void>;
  restart(): Promise<void>;
};

/** Starts `v2ray -config` with the API on a free loopback port and waits until GetSysStats answers. */
export async function startV2rayServer(
  cleanup: Cleanup,
  options: { apiTls?: boolean } = {},
): Promise<V2rayServer> {
  const dir = tempDir(cleanup);
  const apiPort = await freePort();
  const cert = options.apiTls === true ? makeCert(dir, "api") : undefined;
  const configPath = join(dir, "server.json");
  writeFileSync(configPath, JSON.stringify(serverConfig(apiPort, dir, cert), null, 1));
  const apiCredentials = cert === undefined ? undefined : { ca: cert.certPem, server_name: "localhost" };
  const apiAddress = `127.0.0.1:${apiPort}`;
  let child = spawnV2ray(configPath, join(dir, "server.stderr"));
  cleanup(() => stopProcess(child, "SIGKILL"));
  await waitUntilApiAnswers(apiAddress, apiCredentials);
  return {
    apiPort,
    apiAddress,
    apiCredentials,
    dir,
    pid: () => child.pid ?? -1,
    isAlive: () => isProcessAlive(child),
    kill: (signal) => stopProcess(child, signal),
    restart: async () => {
      await stopProcess(child);
      child = spawnV2ray(configPath, join(dir, "server.stderr"));
      await waitUntilApiAnswers(apiAddress, apiCredentials);
    },
  };
}

async function waitUntilApiAnswers(address: string, credentials: ApiCredentials | undefined): Promise<void> {
  const client = new GrpcCoreClient({
    address,
    credentials,
    layout: "v2ray-4",
    capabilities: [],
    timeoutMs: 1000,
    reconnectBackoffMs: { initial: 20, max: 100 },
  });
  try {
    await waitFor(async () => (await client.getSysStats()) !== undefined, {
      timeoutMs: 15_000,
      what: `v2ray API at ${address}`,
    });
  } finally {
    client.close();
  }
}

/** Starts a v2ray client process (e.g. socks inbounds -> proxy outbounds) and waits for its ports. */
export function startV2rayClient(cleanup: Cleanup, config: object, ports: number[]): Promise<ChildProcess> {
  return startClientProcess(cleanup, "v2ray", (path) => ["-config", path], config, ports);
}

/** Starts any client that reads a JSON config file (v2ray, ss-local, trojan) and waits for its ports. */
export async function startClientProcess(
  cleanup: Cleanup,
  command: string,
  args: (configPath: string) => string[],
  config: object,
  ports: number[],
): Promise<ChildProcess> {
  const dir = tempDir(cleanup);
  const configPath = join(dir, "client.json");
  writeFileSync(configPath, JSON.stringify(config, null, 1));
  const child = spawnTracked(command, args(configPath), join(dir, "client.stderr"));
  cleanup(() => stopProcess(child, "SIGKILL"));
  for (const port of ports) {
    await waitFor(() => canConnect(port), { timeoutMs: 15_000, what: `${command} port ${port}` });
  }
  return child;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** A loopback HTTP server answering every GET with `body`. */
export async function startHttpServer(cleanup: Cleanup, body: Buffer): Promise<number> {
  const server = createHttpServer((_request, response) => {
    response.writeHead(200, { "content-type": "application/octet-stream", "content-length": body.length });
    response.end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  cleanup(() => new Promise((resolve) => server.close(resolve)));
  const address = server.address();
  return typeof address === "object" && address !== null ? address.port : 0;
}

export type SocksResponse = { status: number; body: Buffer };

function parseHttp(buffer: Buffer): (SocksResponse & { complete: boolean }) | undefined {
  const headerEnd = buffer.indexOf("\r\n\r\n");
  if (headerEnd < 0) return undefined;
  const head = buffer.subarray(0, headerEnd).toString("latin1");
  const body = buffer.subarray(headerEnd + 4);
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1];
  return {
    status: Number(head.split(" ")[1]),
    body,
    complete: length !== undefined && body.length >= Number(length),
  };
}

/** HTTP/1.0 GET through a SOCKS5 proxy (no auth, CONNECT to 127.0.0.1), with a deadline. */
export function fetchViaSocks(
  socksPort: number,
  target: { port: number; path: string },
  timeoutMs = 10_000,
): Promise<SocksResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(socksPort, "127.0.0.1");
    const timer = setTimeout(
      () => socket.destroy(new Error(`socks fetch via ${socksPort} timed out`)),
      timeoutMs,
    );
    let stage: "greeting" | "connect" | "http" = "greeting";
    let buffer = Buffer.alloc(0);
    const finish = (error?: Error) => {
      clearTimeout(timer);
      const response = stage === "http" ? parseHttp(buffer) : undefined;
      socket.destroy();
      if (response !== undefined) resolve({ status: response.status, body: response.body });
      else reject(error ?? new Error(`no HTTP response via socks ${socksPort}`));
    };
    socket.on("connect", () => socket.write(Buffer.from([5, 1, 0])));
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (stage === "greeting" && buffer.length >= 2) {
        if (buffer[0] !== 5 || buffer[1] !== 0) return finish(new Error("socks greeting refused"));
        buffer = buffer.subarray(2);
        stage = "connect";
        socket.write(Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, target.port >> 8, target.port & 0xff]));
      } else if (stage === "connect" && buffer.length >= 10) {
        if (buffer[1] !== 0) return finish(new Error(`socks connect failed: ${buffer[1]}`));
        buffer = buffer.subarray(10);
        stage = "http";
        socket.write(`GET ${target.path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n`);
      } else if (stage === "http" && parseHttp(buffer)?.complete === true) {
        finish();
      }
    });
    socket.on("error", (error) => finish(error));
    socket.on("close", () => finish());
  });
}
