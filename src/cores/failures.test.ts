// How the client fails: a stopped core, a wrong port, a listener that never answers, and the API
// behind TLS with the right and the wrong CA. Errors arrive as the project's codes within the deadline.

import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import { describe, test } from "node:test";
import { freePort } from "../../test/support/ports.ts";
import { requires } from "../../test/support/requires.ts";
import { API_TAG, CleanupStack, makeCert, startV2rayServer, tempDir } from "../../test/support/v2ray.ts";
import { GrpcCoreClient, type GrpcCoreClientOptions } from "./grpc-core-client.ts";
import { buildInbound } from "./inbound-builder/build.ts";

const needs = requires("v2ray", "openssl");

const stack = new CleanupStack();
needs.after(() => stack.run());

function clientFor(options: GrpcCoreClientOptions): GrpcCoreClient {
  const client = new GrpcCoreClient({ protectedTags: [API_TAG], ...options });
  stack.add(() => client.close());
  return client;
}

async function failsWith(
  promise: Promise<unknown>,
  code: string,
): Promise<{ message: string; elapsedMs: number }> {
  const started = Date.now();
  try {
    await promise;
  } catch (error) {
    const { code: actual, message } = error as { code?: string; message: string };
    assert.equal(actual, code, message);
    return { message, elapsedMs: Date.now() - started };
  }
  assert.fail(`expected ${code}`);
}

describe("core failures", needs, () => {
  test("a stopped core gives core_unavailable well before the deadline", async () => {
    const server = await startV2rayServer(stack.add);
    const client = clientFor({ address: server.apiAddress, timeoutMs: 3000 });
    assert.equal(await client.detectFlavor(), "v2ray");
    await server.kill("SIGKILL");
    assert.equal(server.isAlive(), false);
    const { elapsedMs } = await failsWith(client.getSysStats(), "core_unavailable");
    assert.ok(elapsedMs < 3000, `took ${elapsedMs} ms`);
  });

  test("a port nobody listens on gives core_unavailable, flavor still unknown", async () => {
    const client = clientFor({ address: `127.0.0.1:${await freePort()}`, timeoutMs: 3000 });
    const { elapsedMs, message } = await failsWith(client.detectFlavor(), "core_unavailable");
    assert.ok(elapsedMs < 3000, `took ${elapsedMs} ms`);
    assert.match(message, /ECONNREFUSED/);
    assert.equal(client.flavor, null);
  });

  test("a listener that accepts and never answers gives core_timeout at the deadline", async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket));
    const port = await freePort();
    await new Promise<void>((resolve) => silent.listen(port, "127.0.0.1", resolve));
    stack.add(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => silent.close(resolve));
    });
    const client = clientFor({ address: `127.0.0.1:${port}`, timeoutMs: 600 });
    const { elapsedMs } = await failsWith(client.getSysStats(), "core_timeout");
    assert.ok(elapsedMs >= 550 && elapsedMs < 2000, `took ${elapsedMs} ms`);
  });

  test("the API behind TLS (dokodemo-door + tls) works with the right CA and a server name", async () => {
    const server = await startV2rayServer(stack.add, { apiTls: true });
    assert.ok(server.apiCredentials !== undefined);
    const client = clientFor({
      address: server.apiAddress,
      credentials: { ...server.apiCredentials, token: "bearer-is-ignored-by-v2ray" },
    });
    assert.equal(await client.detectFlavor(), "v2ray");
    const built = buildInbound(
      { tag: "tls-api-probe", port: await freePort(), listen: "127.0.0.1", protocol: "trojan" },
      "v2ray",
    );
    assert.ok(built.ok);
    await client.addInbound(built.value);
    await client.removeInbound("tls-api-probe");

    const wrongCa = makeCert(tempDir(stack.add), "other").certPem;
    const token = "secret-token-never-in-messages";
    const wrong = clientFor({
      address: server.apiAddress,
      credentials: { ca: wrongCa, server_name: "localhost", token },
      timeoutMs: 3000,
    });
    const { message } = await failsWith(wrong.getSysStats(), "core_unavailable");
    assert.doesNotMatch(message, new RegExp(token));
    assert.doesNotMatch(message, /BEGIN CERTIFICATE/);

    const plaintext = clientFor({ address: server.apiAddress, timeoutMs: 1500 });
    await assert.rejects(plaintext.getSysStats(), (error: { code?: string }) =>
      ["core_unavailable", "core_timeout"].includes(error.code ?? ""),
    );
    assert.ok(server.isAlive());
  });
});
