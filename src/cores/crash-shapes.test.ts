// Every request shape that crashes V2Ray 4.34 (probe §7) is refused before a byte is sent, by the
// builder or by the client's guards; the real core stays alive throughout.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { clone, create, toBinary } from "@bufbuild/protobuf";
import { InterceptingCall, type Interceptor } from "@grpc/grpc-js";
import { freePort } from "../../test/support/ports.ts";
import { requires } from "../../test/support/requires.ts";
import { API_TAG, CleanupStack, startV2rayServer, type V2rayServer } from "../../test/support/v2ray.ts";
import * as cmd from "../gen/v2ray/app/proxyman_command_pb.ts";
import { ReceiverConfigSchema } from "../gen/v2ray/app/proxyman_pb.ts";
import { InboundHandlerConfigSchema } from "../gen/v2ray/core_pb.ts";
import { ConfigSchema as VlessInboundSchema } from "../gen/v2ray/proxy/vless_inbound_pb.ts";
import type { CoreProtocol } from "./core-types.ts";
import { GrpcCoreClient } from "./grpc-core-client.ts";
import { buildInbound, buildUser } from "./inbound-builder/build.ts";
import type { BuiltInbound, BuiltUser } from "./inbound-builder/built.ts";
import { typedV2ray } from "./inbound-builder/typed-message.ts";
import { addInboundRequestProblems, alterInboundRequestProblems } from "./request-guards.ts";

const needs = requires("v2ray");

const CREDENTIAL: Record<CoreProtocol, string> = {
  vless: "11111111-1111-4111-8111-111111111111",
  vmess: "33333333-3333-4333-8333-333333333333",
  trojan: "trojan-pass",
  shadowsocks: "ss-pass",
};

function v2Inbound(json: object): BuiltInbound & { flavor: "v2ray" } {
  const result = buildInbound(json, "v2ray");
  assert.ok(result.ok, JSON.stringify(result));
  assert.equal(result.value.flavor, "v2ray");
  return result.value as BuiltInbound & { flavor: "v2ray" };
}

function v2User(
  protocol: Exclude<CoreProtocol, "shadowsocks">,
  email: string,
): BuiltUser & { flavor: "v2ray" } {
  const result = buildUser(protocol, "v2ray", { email, credential: CREDENTIAL[protocol] });
  assert.ok(result.ok, JSON.stringify(result));
  assert.equal(result.value.flavor, "v2ray");
  return result.value as BuiltUser & { flavor: "v2ray" };
}

async function refused(promise: Promise<unknown>, pattern?: RegExp): Promise<void> {
  await assert.rejects(promise, (error: { code?: string; details?: { message: string }[] }) => {
    assert.equal(error.code, "core_request_refused", JSON.stringify(error));
    if (pattern !== undefined) assert.match(JSON.stringify(error.details), pattern);
    return true;
  });
}

describe("request shapes that crash V2Ray 4.34 are refused before sending", needs, () => {
  const stack = new CleanupStack();
  after(() => stack.run());
  const sent: string[] = [];
  const countSent: Interceptor = (options, nextCall) => {
    sent.push(options.method_definition.path);
    return new InterceptingCall(nextCall(options));
  };
  let server: V2rayServer;
  let client: GrpcCoreClient;
  const inbounds: Record<string, BuiltInbound & { flavor: "v2ray" }> = {};

  before(async () => {
    server = await startV2rayServer(stack.add);
    client = new GrpcCoreClient({
      address: server.apiAddress,
      protectedTags: [API_TAG],
      interceptors: [countSent],
    });
    stack.add(() => client.close());
    for (const protocol of ["vless", "vmess", "trojan"] as const) {
      const key = protocol === "trojan" ? "password" : "id";
      const built = v2Inbound({
        tag: `crash-${protocol}`,
        port: await freePort(),
        listen: "127.0.0.1",
        protocol,
        settings: { clients: [{ email: `${protocol}-first@t`, [key]: CREDENTIAL[protocol] }] },
      });
      await client.addInbound(built);
      inbounds[protocol] = built;
    }
    // The counter sees real sends, so "nothing sent" below is not vacuous.
    assert.equal(sent.filter((path) => path.endsWith("HandlerService/AddInbound")).length, 3);
  });

  async function expectNothingSent(action: () => Promise<void>): Promise<void> {
    const before = sent.length;
    await action();
    assert.deepEqual(sent.slice(before), [], "a refused request reached the wire");
    assert.ok(server.isAlive(), "the core died");
  }

  const mismatches: [CoreProtocol, Exclude<CoreProtocol, "shadowsocks">][] = [
    ["vless", "vmess"],
    ["vmess", "vless"],
    ["trojan", "vless"],
    ["vless", "trojan"],
  ];
  for (const [inboundProtocol, userProtocol] of mismatches) {
    test(`a ${userProtocol} account for a ${inboundProtocol} inbound (panic: interface conversion)`, async () => {
      const user = v2User(userProtocol, `mismatch-${userProtocol}@t`);
      await expectNothingSent(async () => {
        await refused(
          client.addUser({ tag: `crash-${inboundProtocol}`, protocol: inboundProtocol }, user),
          /would panic/,
        );
        // Lying about the inbound's protocol does not help: the client remembers what it added.
        await refused(
          client.addUser({ tag: `crash-${inboundProtocol}`, protocol: userProtocol }, user),
          /was added as/,
        );
      });
    });
  }

  test("an AddInbound whose users carry another protocol's account", async () => {
    const forged = { ...v2Inbound({ tag: "crash-forged", port: await freePort(), protocol: "vless" }) };
    forged.config = clone(InboundHandlerConfigSchema, forged.config);
    forged.config.proxySettings = typedV2ray(VlessInboundSchema, {
      clients: [v2User("vmess", "forged@t").user],
    });
    await expectNothingSent(() =>
      refused(client.addInbound(forged), /must be v2ray.core.proxy.vless.Account/),
    );
  });

  test("an AddInbound without receiver, without proxy, or with a receiver without port", async () => {
    const base = v2Inbound({ tag: "crash-parts", port: await freePort(), protocol: "trojan" });
    const noReceiver = { ...base, config: clone(InboundHandlerConfigSchema, base.config) };
    noReceiver.config.receiverSettings = undefined;
    const noProxy = { ...base, config: clone(InboundHandlerConfigSchema, base.config) };
    noProxy.config.proxySettings = undefined;
    const noPort = { ...base, config: clone(InboundHandlerConfigSchema, base.config) };
    noPort.config.receiverSettings = typedV2ray(ReceiverConfigSchema, {
      listen: { address: { case: "ip", value: new Uint8Array([127, 0, 0, 1]) } },
    });
    await expectNothingSent(async () => {
      await refused(client.addInbound(noReceiver), /receiver_settings/);
      await refused(client.addInbound(noProxy), /proxy_settings/);
      await refused(client.addInbound(noPort), /port.*is missing/);
    });
    const missing = toBinary(cmd.AddInboundRequestSchema, create(cmd.AddInboundRequestSchema, {}));
    assert.match(JSON.stringify(addInboundRequestProblems("v2ray", missing, base)), /inbound.*is missing/);
  });

  test("an AlterInbound without operation, a user without account, an empty email", async () => {
    const noOperation = toBinary(
      cmd.AlterInboundRequestSchema,
      create(cmd.AlterInboundRequestSchema, { tag: "crash-vless" }),
    );
    assert.match(JSON.stringify(alterInboundRequestProblems("v2ray", noOperation)), /operation.*is missing/);
    const user = v2User("vless", "no-account@t");
    const noAccount = { ...user, user: { ...user.user, account: undefined } };
    await expectNothingSent(async () => {
      await refused(client.addUser({ tag: "crash-vless", protocol: "vless" }, noAccount), /account/);
      await refused(client.removeUser("crash-vless", ""), /email.*is empty/);
    });
    assert.equal(buildUser("vless", "v2ray", { email: "", credential: CREDENTIAL.vless }).ok, false);
  });

  test("a duplicate tag, the API inbound's tag, a shadowsocks user on V2Ray", async () => {
    const vless = inbounds.vless;
    assert.ok(vless !== undefined);
    await expectNothingSent(async () => {
      await assert.rejects(
        client.addInbound(vless),
        (error: { code?: string }) => error.code === "core_conflict",
      );
      await refused(client.removeInbound(API_TAG));
      // buildUser refuses shadowsocks users for V2Ray; a forged one is refused by the client.
      assert.equal(
        buildUser("shadowsocks", "v2ray", {
          email: "ss@t",
          credential: "x",
          shadowsocksMethod: "aes-128-gcm",
        }).ok,
        false,
      );
      const forged = { ...v2User("trojan", "ss@t"), protocol: "shadowsocks" as const };
      await refused(
        client.addUser(
          { tag: "crash-ss", protocol: "shadowsocks", shadowsocksMethod: "aes-128-gcm" },
          forged,
        ),
      );
    });
  });

  test("inbound JSON the builder refuses: missing/invalid ports, empty/duplicate emails, duplicate credentials", async () => {
    const id = CREDENTIAL.vless;
    const cases: [object, RegExp][] = [
      [{ tag: "p", protocol: "vless" }, /port.*is required/],
      [{ tag: "p", port: 0, protocol: "vless" }, /port/],
      [{ tag: "p", port: 65536, protocol: "vless" }, /port/],
      [{ tag: "p", port: "80-90", protocol: "vless" }, /ranges/],
      [{ tag: "p", port: 1.5, protocol: "vless" }, /port/],
      [{ tag: "p", port: 443, listen: "/run/x.sock", protocol: "vless" }, /listen/],
      [
        { tag: "p", port: 443, protocol: "vless", settings: { clients: [{ id, email: "" }] } },
        /email.*must not be empty/,
      ],
      [{ tag: "p", port: 443, protocol: "vless", settings: { clients: [{ id }] } }, /email.*is required/],
      [
        {
          tag: "p",
          port: 443,
          protocol: "vless",
          settings: {
            clients: [
              { id, email: "a@t" },
              { id: CREDENTIAL.vmess, email: "A@t" },
            ],
          },
        },
        /duplicates/,
      ],
      [
        {
          tag: "p",
          port: 443,
          protocol: "vless",
          settings: {
            clients: [
              { id, email: "a@t" },
              { id, email: "b@t" },
            ],
          },
        },
        /same credential/,
      ],
      [
        {
          tag: "p",
          port: 443,
          protocol: "shadowsocks",
          settings: {
            method: "aes-128-gcm",
            clients: [
              { password: "x1", email: "a@t" },
              { password: "x2", email: "b@t" },
            ],
          },
        },
        /exactly one user/,
      ],
      [
        {
          tag: "p",
          port: 443,
          protocol: "vmess",
          settings: { clients: [{ id, email: "a@t", alterId: 64 }] },
        },
        /alterId/,
      ],
    ];
    await expectNothingSent(async () => {
      for (const [json, pattern] of cases) {
        const result = buildInbound(json, "v2ray");
        assert.equal(result.ok, false, JSON.stringify(json));
        if (!result.ok) assert.match(JSON.stringify(result.problems), pattern);
      }
    });
  });
});
