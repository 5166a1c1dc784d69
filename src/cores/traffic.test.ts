// Real traffic through inbounds that only the client created: a v2ray client process sends HTTP
// through every protocol/transport V2Ray 4.34 supports, and per-user counters show each user's bytes.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";
import { isDeepStrictEqual } from "node:util";
import { waitFor } from "../../test/support/poll.ts";
import { freePorts } from "../../test/support/ports.ts";
import { requires } from "../../test/support/requires.ts";
import {
  API_TAG,
  type Cert,
  CleanupStack,
  fetchViaSocks,
  makeCert,
  startV2rayClient,
  startV2rayServer,
  tempDir,
  type V2rayServer,
} from "../../test/support/v2ray.ts";
import { decodeTraffic, encodeTraffic, parseTraffic, polledOf } from "../features/traffic/traffic.ts";
import { API_INBOUND_TAGS, type CoreProtocol } from "./core-types.ts";
import { GrpcCoreClient } from "./grpc-core-client.ts";
import { buildInbound, buildUser } from "./inbound-builder/build.ts";

const needs = requires("v2ray", "openssl");

type Case = { name: string; protocol: CoreProtocol; network: "tcp" | "ws"; tls: boolean; method?: string };

const CASES: Case[] = [
  { name: "vless-tcp", protocol: "vless", network: "tcp", tls: false },
  { name: "vless-tcp-tls", protocol: "vless", network: "tcp", tls: true },
  { name: "vless-ws", protocol: "vless", network: "ws", tls: false },
  { name: "vless-ws-tls", protocol: "vless", network: "ws", tls: true },
  { name: "vmess-tcp", protocol: "vmess", network: "tcp", tls: false },
  { name: "vmess-tcp-tls", protocol: "vmess", network: "tcp", tls: true },
  { name: "vmess-ws", protocol: "vmess", network: "ws", tls: false },
  { name: "vmess-ws-tls", protocol: "vmess", network: "ws", tls: true },
  { name: "trojan-tls", protocol: "trojan", network: "tcp", tls: true },
  { name: "trojan-ws-tls", protocol: "trojan", network: "ws", tls: true },
  { name: "trojan-tcp", protocol: "trojan", network: "tcp", tls: false },
  { name: "ss-aes-128-gcm", protocol: "shadowsocks", network: "tcp", tls: false, method: "aes-128-gcm" },
  { name: "ss-aes-256-gcm", protocol: "shadowsocks", network: "tcp", tls: false, method: "aes-256-gcm" },
  {
    name: "ss-chacha20",
    protocol: "shadowsocks",
    network: "tcp",
    tls: false,
    method: "chacha20-ietf-poly1305",
  },
];

type Seat = { kase: Case; email: string; credential: string; socksPort: number; bytes: number };

function credentialFor(kase: Case, index: number): string {
  const hex = (index + CASES.indexOf(kase) * 2 + 1).toString(16).padStart(12, "0");
  return kase.protocol === "vless" || kase.protocol === "vmess"
    ? `aaaaaaaa-0000-4000-8000-${hex}`
    : `pass-${kase.name}-${index}`;
}

function serverStream(kase: Case, cert: Cert): object {
  return {
    network: kase.network,
    ...(kase.network === "ws" ? { wsSettings: { path: `/${kase.name}` } } : {}),
    ...(kase.tls
      ? {
          security: "tls",
          // Xray allows the PEM as one string or as an array of lines: use both forms.
          tlsSettings: { certificates: [{ certificate: cert.certPem.split("\n"), key: cert.keyPem }] },
        }
      : {}),
  };
}

function clientOutbound(kase: Case, seat: Seat, port: number, cert: Cert): object {
  const server = { address: "127.0.0.1", port };
  const settings =
    kase.protocol === "vless"
      ? { vnext: [{ ...server, users: [{ id: seat.credential, encryption: "none" }] }] }
      : kase.protocol === "vmess"
        ? { vnext: [{ ...server, users: [{ id: seat.credential, alterId: 0, security: "aes-128-gcm" }] }] }
        : kase.protocol === "trojan"
          ? { servers: [{ ...server, password: seat.credential }] }
          : { servers: [{ ...server, method: kase.method, password: seat.credential }] };
  const stream = {
    network: kase.network,
    ...(kase.network === "ws" ? { wsSettings: { path: `/${kase.name}` } } : {}),
    ...(kase.tls
      ? {
          security: "tls",
          tlsSettings: {
            serverName: "localhost",
            certificates: [{ usage: "verify", certificateFile: cert.certPath }],
          },
        }
      : {}),
  };
  return { tag: `out-${seat.email}`, protocol: kase.protocol, settings, streamSettings: stream };
}

describe("traffic through API-created inbounds on V2Ray 4.34", needs, () => {
  const stack = new CleanupStack();
  after(() => stack.run());
  let server: V2rayServer;
  let client: GrpcCoreClient;
  let httpPort = 0;
  const seats: Seat[] = [];

  before(async () => {
    server = await startV2rayServer(stack.add);
    client = new GrpcCoreClient({ address: server.apiAddress, protectedTags: [API_TAG] });
    stack.add(() => client.close());
    const cert = makeCert(tempDir(stack.add), "proxy");
    httpPort = await startBlobServer(stack.add);
    const inboundPorts = await freePorts(CASES.length);
    const clientConfig = {
      log: { loglevel: "warning" },
      inbounds: [] as object[],
      outbounds: [] as object[],
      routing: { rules: [] as object[] },
    };
    for (const [index, kase] of CASES.entries()) {
      const port = inboundPorts[index] ?? 0;
      const users = kase.protocol === "shadowsocks" ? 1 : 2;
      const socksPorts = await freePorts(users);
      const caseSeats = socksPorts.map((socksPort, u) => ({
        kase,
        email: `${kase.name}-u${u}@t`,
        credential: credentialFor(kase, u),
        socksPort,
        bytes: 50_000 + index * 1000 + u * 20_000,
      }));
      await addCase(client, kase, port, caseSeats, cert);
      for (const seat of caseSeats) {
        clientConfig.inbounds.push({
          tag: `in-${seat.email}`,
          listen: "127.0.0.1",
          port: seat.socksPort,
          protocol: "socks",
          settings: { auth: "noauth", udp: false },
        });
        clientConfig.outbounds.push(clientOutbound(kase, seat, port, cert));
        clientConfig.routing.rules.push({
          type: "field",
          inboundTag: [`in-${seat.email}`],
          outboundTag: `out-${seat.email}`,
        });
      }
      seats.push(...caseSeats);
    }
    await startV2rayClient(
      stack.add,
      clientConfig,
      seats.map((seat) => seat.socksPort),
    );
  });

  for (const kase of CASES) {
    test(`${kase.name}: every user's download arrives intact and is counted for that user`, async () => {
      for (const seat of seats.filter((s) => s.kase === kase)) {
        const response = await fetchViaSocks(seat.socksPort, {
          port: httpPort,
          path: `/bytes/${seat.bytes}`,
        });
        assert.equal(response.status, 200);
        assert.equal(response.body.length, seat.bytes);
        assert.ok(response.body.equals(blob(seat.bytes)), "body differs");
        let seen = "nothing yet";
        const { downlink, uplink } = await waitFor(
          async () => {
            const counters = await client.queryStats(`user>>>${seat.email}>>>`, false);
            seen = counters.map((stat) => `${stat.name}=${stat.value}`).join(", ");
            const down = counters.find((stat) => stat.name.endsWith(">>>downlink"))?.value ?? 0n;
            const up = counters.find((stat) => stat.name.endsWith(">>>uplink"))?.value ?? 0n;
            return down >= BigInt(seat.bytes) && { downlink: down, uplink: up };
          },
          { timeoutMs: 10_000, what: `${seat.email} counters` },
        ).catch((error: Error) =>
          assert.fail(`${error.message}; last seen: ${seen}; cause: ${String(error.cause)}`),
        );
        // The payload plus ~200 bytes of HTTP headers, and nothing of the other user's download.
        assert.ok(
          downlink >= BigInt(seat.bytes) && downlink < BigInt(seat.bytes + 1000),
          `${seat.email} downlink ${downlink}`,
        );
        assert.ok(uplink > 0n && uplink < 1000n, `${seat.email} uplink ${uplink}`);
      }
      assert.ok(server.isAlive());
    });
  }

  test("a traffic poll's in-place reading of the real core's answers equals the full decoder's, read with parseTraffic", async () => {
    // Counters can still move as connections close, so compare a scan taken between two equal full reads.
    const full = async () =>
      decodeTraffic(
        encodeTraffic(
          polledOf(
            parseTraffic(
              [
                ...(await client.queryStats("user>>>", false)),
                ...(await client.queryStats("inbound>>>", false)),
              ],
              API_INBOUND_TAGS,
            ),
          ),
        ),
      );
    const agreed = await waitFor(
      async () => {
        const before = await full();
        const scanned = decodeTraffic(encodeTraffic(await client.queryTraffic(false)));
        const after = await full();
        return isDeepStrictEqual(before, after) && isDeepStrictEqual(scanned, after) && scanned;
      },
      { timeoutMs: 10_000, what: "a scan between two equal full reads" },
    );
    assert.equal(agreed.users.size, seats.length, "every user's counters");
    assert.ok(agreed.inbounds.size >= CASES.length, "every inbound's counters");
  });
});

async function addCase(
  client: GrpcCoreClient,
  kase: Case,
  port: number,
  seats: Seat[],
  cert: Cert,
): Promise<void> {
  const [first, ...rest] = seats;
  assert.ok(first !== undefined);
  const settings =
    kase.protocol === "shadowsocks"
      ? { method: kase.method, clients: [{ email: first.email, password: first.credential }] }
      : {
          clients: [
            { email: first.email, [kase.protocol === "trojan" ? "password" : "id"]: first.credential },
          ],
        };
  const json = {
    tag: kase.name,
    port,
    listen: "127.0.0.1",
    protocol: kase.protocol,
    settings,
    streamSettings: serverStream(kase, cert),
  };
  const built = buildInbound(json, "v2ray");
  assert.ok(built.ok, JSON.stringify(built));
  await client.addInbound(built.value);
  for (const seat of rest) {
    const user = buildUser(kase.protocol, "v2ray", { email: seat.email, credential: seat.credential });
    assert.ok(user.ok, JSON.stringify(user));
    await client.addUser(built.value.ref, user.value);
  }
}

const blobCache = new Map<number, Buffer>();
const seed = randomBytes(256 * 1024);
function blob(size: number): Buffer {
  let value = blobCache.get(size);
  if (value === undefined) {
    value = Buffer.concat([seed, seed]).subarray(size % 1024, (size % 1024) + size);
    blobCache.set(size, value);
  }
  return value;
}

async function startBlobServer(cleanup: (fn: () => unknown) => void): Promise<number> {
  const server = createServer((request, response) => {
    const size = Number(/^\/bytes\/(\d+)$/.exec(request.url ?? "")?.[1] ?? "0");
    response.writeHead(200, { "content-length": size });
    response.end(blob(size));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  cleanup(() => new Promise((resolve) => server.close(resolve)));
  const address = server.address();
  return typeof address === "object" && address !== null ? address.port : 0;
}
