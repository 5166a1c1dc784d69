// Provisioning through the HTTP API as an operator would (server, certificate, template, inbound,
// grant, subscription), and real clients configured only from the decoded share links.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LinkTarget } from "../../src/links/types.ts";
import type { TestApp } from "./app.ts";
import { toSsLocalConfig, toTrojanClientConfig, toV2rayOutbound } from "./link-client-configs.ts";
import { decodeLink, escapingProblems } from "./link-decoder.ts";
import { waitFor } from "./poll.ts";
import { freePort } from "./ports.ts";
import { createTemplate, request } from "./templates.ts";
import { type Cleanup, fetchViaSocks, startClientProcess, startV2rayClient, tempDir } from "./v2ray.ts";

export type Json = Record<string, unknown>;
export type InboundBody = Json & { id: string; tag: string; port_override: number; sync_state: string };
export type AccessBody = Json & { id: string; user_id: string; proxy_user_id: string; sync_state: string };

export async function registerServer(
  t: TestApp,
  grpcPort: number,
  body: Json = {},
): Promise<{ id: string; name: string }> {
  const res = await request(t, "POST", "/api/servers", {
    name: `core ${Math.random().toString(36).slice(2, 8)}`,
    hostname: "127.0.0.1",
    grpc_port: grpcPort,
    ...body,
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { id: string; name: string };
}

/** A self-signed certificate from the certificates API; `file` holds its PEM for clients to trust. */
export async function apiCertificate(
  t: TestApp,
  cleanup: Cleanup,
  domain = "localhost",
): Promise<{ id: string; file: string }> {
  const res = await request(t, "POST", "/api/certificates", {
    name: `cert-${Math.random().toString(36).slice(2, 8)}`,
    cert_type: "self_signed",
    domain,
  });
  assert.equal(res.statusCode, 201, res.body);
  const certificate = res.json() as { id: string; certificate_pem: string };
  const file = join(tempDir(cleanup), "ca.pem");
  writeFileSync(file, certificate.certificate_pem);
  return { id: certificate.id, file };
}

export type Kind = {
  protocol: "vless" | "vmess" | "trojan" | "shadowsocks";
  network: "tcp" | "ws";
  tls: boolean;
  method?: string;
};

/** A template for one protocol/transport/security, listening on loopback only. */
export function kindTemplate(kind: Kind): Json {
  const settings =
    kind.protocol === "vless"
      ? { clients: [], decryption: "none" }
      : kind.protocol === "shadowsocks"
        ? { method: kind.method ?? "aes-128-gcm", network: "tcp" }
        : { clients: [] };
  const stream = {
    network: kind.network,
    security: kind.tls ? "tls" : "none",
    ...(kind.network === "ws" ? { wsSettings: { path: "{{ws_path}}" } } : {}),
    ...(kind.tls ? { tlsSettings: { serverName: "{{domain}}", alpn: ["http/1.1"] } } : {}),
  };
  const name = `${kind.protocol}-${kind.network}${kind.tls ? "-tls" : ""}`;
  return {
    name: `${name} ${Math.random().toString(36).slice(2, 6)}`,
    config: {
      listen: "127.0.0.1",
      port: "{{port}}",
      tag: "{{tag}}",
      protocol: kind.protocol,
      settings,
      ...(kind.protocol === "shadowsocks" ? {} : { streamSettings: stream }),
    },
    variables: kind.network === "ws" ? [{ name: "ws_path", default: `/${name}` }] : [],
  };
}

export async function templateFor(t: TestApp, kind: Kind): Promise<{ id: string; name: string }> {
  return (await createTemplate(t, kindTemplate(kind))) as { id: string; name: string };
}

export async function createInbound(t: TestApp, serverId: string, body: Json): Promise<InboundBody> {
  const res = await request(t, "POST", `/api/servers/${serverId}/inbounds`, body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as InboundBody;
}

export async function grant(
  t: TestApp,
  serverId: string,
  inboundId: string,
  body: Json,
): Promise<AccessBody> {
  const res = await request(t, "POST", `/api/servers/${serverId}/inbounds/${inboundId}/users`, body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as AccessBody;
}

/** GET /sub/{id} (no token), checked for status, type and escaping; the decoded link lines. */
export async function subscriptionLinks(t: TestApp, userId: string): Promise<string[]> {
  const res = await t.app.inject({ method: "GET", url: `/sub/${userId}` });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers["content-type"], "text/plain; charset=utf-8");
  assert.match(res.body, /^[A-Za-z0-9+/]+={0,2}$/, "one line of standard base64");
  const lines = Buffer.from(res.body, "base64").toString("utf8").split("\n");
  const links = lines.filter((line) => !line.startsWith("#"));
  for (const link of links) assert.deepEqual(escapingProblems(link), [], link);
  const remarks = links.map((link) => decodeLink(link).remark);
  assert.equal(new Set(remarks).size, remarks.length, `remarks are unique: ${remarks.join(" | ")}`);
  return links;
}

export type RealClient = "v2ray" | "ss-local" | "trojan";

/** Starts a real client configured only from the decoded link; returns its local SOCKS port. */
export async function startClient(
  cleanup: Cleanup,
  client: RealClient,
  target: LinkTarget,
  caFile?: string,
): Promise<number> {
  const socksPort = await freePort();
  if (client === "ss-local") {
    await startClientProcess(
      cleanup,
      "ss-local",
      (path) => ["-c", path],
      toSsLocalConfig(target, socksPort),
      [socksPort],
    );
  } else if (client === "trojan") {
    const config = toTrojanClientConfig(target, socksPort, caFile);
    await startClientProcess(cleanup, "trojan", (path) => ["-c", path], config, [socksPort]);
  } else {
    const outbound = toV2rayOutbound(target, caFile === undefined ? {} : { caFile });
    const inbound = { listen: "127.0.0.1", port: socksPort, protocol: "socks", settings: { auth: "noauth" } };
    await startV2rayClient(
      cleanup,
      { log: { loglevel: "warning" }, inbounds: [inbound], outbounds: [outbound] },
      [socksPort],
    );
  }
  return socksPort;
}

/** Fetches the page through the client; true when the whole body came back. */
export async function carries(
  socksPort: number,
  httpPort: number,
  body: Buffer,
  timeoutMs = 5000,
): Promise<boolean> {
  try {
    const res = await fetchViaSocks(socksPort, { port: httpPort, path: "/" }, timeoutMs);
    return res.status === 200 && res.body.equals(body);
  } catch {
    return false;
  }
}

/** Waits until the client carries the page (a fresh inbound may take a moment to listen). */
export async function expectCarries(
  socksPort: number,
  httpPort: number,
  body: Buffer,
  what: string,
): Promise<void> {
  await waitFor(() => carries(socksPort, httpPort, body), {
    timeoutMs: 15_000,
    what: `${what} to carry traffic`,
  });
}

/**
 * Waits until the client no longer gets through. A rejected VMess client hangs until it times out
 * (the core drains the connection), so each attempt has a short deadline.
 */
export async function expectBlocked(
  socksPort: number,
  httpPort: number,
  body: Buffer,
  what: string,
): Promise<void> {
  await waitFor(async () => !(await carries(socksPort, httpPort, body, 2500)), {
    timeoutMs: 15_000,
    what: `${what} to stop carrying traffic`,
  });
}
