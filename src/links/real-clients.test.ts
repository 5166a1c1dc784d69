// The proof that a link says enough to connect: a real v2ray 4.34 server with static inbounds,
// and the Debian clients (v2ray, ss-local, trojan) configured only from the decoded links,
// carry HTTP requests to a local origin. Escaping-heavy passwords travel the whole way.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
  type JsonObject,
  toSsLocalConfig,
  toTrojanClientConfig,
  toV2rayOutbound,
} from "../../test/support/link-client-configs.ts";
import { decodeLink } from "../../test/support/link-decoder.ts";
import { waitFor } from "../../test/support/poll.ts";
import { freePorts } from "../../test/support/ports.ts";
import { requires } from "../../test/support/requires.ts";
import { selfSignedCert } from "../../test/support/self-signed-cert.ts";
import { buildLink } from "./build.ts";
import type { LinkTarget } from "./types.ts";

const ID = "33333333-3333-4333-8333-333333333333";
const PASSWORD = "p@ss:w/rd+=% x&#?";
const TLS = { type: "tls", sni: "localhost" } as const;
const NO_TLS = { type: "none" } as const;

type Client = "v2ray" | "ss-local" | "trojan";
/** `server` is the inbound's protocol-specific part; `tls` adds the server certificate. */
type Case = { client: Client; target: LinkTarget; server: JsonObject; stream?: JsonObject; tls?: true };

const vless = { protocol: "vless", settings: { clients: [{ id: ID }], decryption: "none" } };
const vmess = { protocol: "vmess", settings: { clients: [{ id: ID, alterId: 0 }] } };
const trojan = { protocol: "trojan", settings: { clients: [{ password: PASSWORD }] } };
const ss = (method: string) => ({ protocol: "shadowsocks", settings: { method, password: PASSWORD } });
const at = { host: "127.0.0.1", port: 0 }; // ports are assigned when the test runs
const vlessUser = { id: ID, encryption: "none" };
/** One link, two clients: v2ray and Debian's trojan both read it. */
const trojanTls: LinkTarget = {
  protocol: "trojan",
  ...at,
  remark: "t",
  credential: { password: PASSWORD },
  transport: { type: "tcp" },
  security: TLS,
};

const CASES: Record<string, Case> = {
  "vless-tcp": {
    client: "v2ray",
    target: {
      protocol: "vless",
      ...at,
      remark: "🇩🇪 a+b",
      credential: vlessUser,
      transport: { type: "tcp" },
      security: NO_TLS,
    },
    server: vless,
  },
  "vless-ws-tls": {
    client: "v2ray",
    target: {
      protocol: "vless",
      ...at,
      remark: "ws tls",
      credential: vlessUser,
      transport: { type: "ws", path: "/vlws", host: "localhost" },
      security: { ...TLS, alpn: ["http/1.1"] },
    },
    server: vless,
    stream: { network: "ws", wsSettings: { path: "/vlws" } },
    tls: true,
  },
  "vmess-http-header": {
    client: "v2ray",
    target: {
      protocol: "vmess",
      ...at,
      remark: "http",
      credential: { id: ID, cipher: "aes-128-gcm" },
      transport: { type: "tcp", http: { host: ["a.example"], path: ["/x"] } },
      security: NO_TLS,
    },
    server: vmess,
    stream: { network: "tcp", tcpSettings: { header: { type: "http", request: { path: ["/x"] } } } },
  },
  "vmess-ws-tls": {
    client: "v2ray",
    target: {
      protocol: "vmess",
      ...at,
      remark: "vm",
      credential: { id: ID, cipher: "aes-128-gcm" },
      transport: { type: "ws", path: "/vm" },
      security: TLS,
    },
    server: vmess,
    stream: { network: "ws", wsSettings: { path: "/vm" } },
    tls: true,
  },
  "trojan-by-v2ray": {
    client: "v2ray",
    target: trojanTls,
    server: trojan,
    tls: true,
  },
  "trojan-by-trojan": {
    client: "trojan",
    target: trojanTls,
    server: trojan,
    tls: true,
  },
  "ss-chacha-alias-by-v2ray": {
    client: "v2ray",
    target: {
      protocol: "shadowsocks",
      ...at,
      remark: "s",
      credential: { method: "chacha20-poly1305", password: PASSWORD },
    },
    server: ss("chacha20-poly1305"),
  },
  "ss-aes256-by-ss-local": {
    client: "ss-local",
    target: {
      protocol: "shadowsocks",
      ...at,
      remark: "s",
      credential: { method: "aes-256-gcm", password: PASSWORD },
    },
    server: ss("aes-256-gcm"),
  },
};

type Running = { name: string; target: LinkTarget; socksPort: number; kind: Client };
type Files = { certFile: string; keyFile: string };

function serverConfig(running: Running[], files: Files): JsonObject {
  const serverTls = {
    security: "tls",
    tlsSettings: { certificates: [{ certificateFile: files.certFile, keyFile: files.keyFile }] },
  };
  const inbounds = running.map(({ name, target }) => {
    const { server, stream = {}, tls } = CASES[name] ?? assert.fail(name);
    return {
      ...server,
      listen: "127.0.0.1",
      port: target.port,
      streamSettings: { ...stream, ...(tls ? serverTls : {}) },
    };
  });
  return { log: { loglevel: "warning" }, inbounds, outbounds: [{ protocol: "freedom" }] };
}

/** Starts every client from nothing but the decoded link; v2ray cases share one process. */
function startClients(
  running: Running[],
  files: Files,
  start: (cmd: string, config: JsonObject, name: string) => void,
) {
  const v2ray = {
    log: { loglevel: "warning" },
    inbounds: [] as JsonObject[],
    outbounds: [] as JsonObject[],
    routing: { rules: [] as JsonObject[] },
  };
  for (const { name, target, socksPort, kind } of running) {
    const decoded = decodeLink(buildLink(target));
    if (kind === "ss-local") start("ss-local", toSsLocalConfig(decoded, socksPort), name);
    if (kind === "trojan") start("trojan", toTrojanClientConfig(decoded, socksPort, files.certFile), name);
    if (kind !== "v2ray") continue;
    v2ray.inbounds.push({
      tag: name,
      listen: "127.0.0.1",
      port: socksPort,
      protocol: "socks",
      settings: { auth: "noauth" },
    });
    v2ray.outbounds.push(toV2rayOutbound(decoded, { tag: `out-${name}`, caFile: files.certFile }));
    v2ray.routing.rules.push({ type: "field", inboundTag: [name], outboundTag: `out-${name}` });
  }
  start("v2ray", v2ray, "v2ray-client");
}

/** HTTP/1.0 GET through a SOCKS5 proxy, one step at a time (not every client accepts pipelined bytes). */
async function fetchViaSocks(
  socksPort: number,
  originPort: number,
  path: string,
): Promise<string | undefined> {
  const socket = connect(socksPort, "127.0.0.1");
  socket.setTimeout(3_000, () => socket.destroy(new Error("timed out")));
  const chunks = socket[Symbol.asyncIterator]();
  let buffered = Buffer.alloc(0);
  const more = async () => {
    const next = await chunks.next();
    if (next.done === true) throw new Error("closed early");
    buffered = Buffer.concat([buffered, next.value]);
  };
  const read = async (bytes: number): Promise<Buffer> => {
    while (buffered.length < bytes) await more();
    const head = buffered.subarray(0, bytes);
    buffered = buffered.subarray(bytes);
    return head;
  };
  try {
    await once(socket, "connect");
    socket.write(Buffer.from([5, 1, 0])); // version 5, one method: no authentication
    if ((await read(2))[1] !== 0) return undefined;
    socket.write(Buffer.from([5, 1, 0, 1, 127, 0, 0, 1, originPort >> 8, originPort & 0xff]));
    if ((await read(10))[1] !== 0) return undefined; // reply with an IPv4 bound address
    socket.write(`GET ${path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n`);
    // Read by Content-Length: proxies pass the origin's close on only after their idle timeouts.
    while (!buffered.includes("\r\n\r\n")) await more();
    const length = Number(/content-length: *(\d+)/i.exec(buffered.toString("latin1"))?.[1] ?? Number.NaN);
    if (Number.isNaN(length)) return undefined;
    const headerBytes = buffered.indexOf("\r\n\r\n") + 4;
    return (await read(headerBytes + length)).subarray(headerBytes).toString("utf8");
  } catch {
    return undefined;
  } finally {
    socket.destroy();
  }
}

test("links carry traffic through real v2ray, ss-local and trojan clients", {
  ...requires("v2ray", "ss-local", "trojan", "openssl"),
  timeout: 60_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-links-e2e-"));
  const children: ChildProcess[] = [];
  const start = (command: string, config: JsonObject, name: string) => {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(config, null, 1));
    children.push(spawn(command, [command === "v2ray" ? "-config" : "-c", file], { stdio: "ignore" }));
  };
  const origin = createServer((request, response) => {
    const body = `hello ${request.url}`;
    response.writeHead(200, { "content-length": Buffer.byteLength(body) }).end(body);
  });
  try {
    const files = selfSignedCert(dir);
    await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
    const names = Object.keys(CASES);
    const ports = await freePorts(names.length * 2);
    const running = names.map((name, i): Running => {
      const { client, target } = CASES[name] ?? assert.fail(name);
      return {
        name,
        kind: client,
        target: { ...target, port: ports[i] ?? 0 },
        socksPort: ports[names.length + i] ?? 0,
      };
    });
    start("v2ray", serverConfig(running, files), "v2ray-server");
    startClients(running, files, start);
    const originPort = (origin.address() as AddressInfo).port;
    for (const { name, socksPort } of running) {
      const fetch = () => fetchViaSocks(socksPort, originPort, `/${name}`);
      const body = await waitFor(fetch, {
        timeoutMs: 15_000,
        intervalMs: 50,
        what: name,
      });
      assert.equal(body, `hello /${name}`);
    }
  } finally {
    for (const child of children) child.kill();
    origin.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
