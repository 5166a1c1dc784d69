// Issue 48, item 4: no format writes a VMess security of `auto`. sing-box sends `auto` on the wire
// as written and Xray 26 refuses it, so every document and link names the cipher itself. VMess
// inbounds on the real v2ray core, a user's /sub in every format the engine serves (the list is the
// engine's own, so a new format fails here until it is read), each format's VMess cipher read the
// way its clients read it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parse } from "yaml";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  apiCertificate,
  createInbound,
  grant,
  type Kind,
  registerServer,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startV2rayServer } from "../../../test/support/v2ray.ts";
import { FORMATS, type Format } from "../../lib/subscription-formats.ts";
import { VMESS_CIPHERS } from "../../links/types.ts";

const needs = requires("v2ray");
const stack = new CleanupStack();
let t: TestApp;
let subscriptionUrl: string;

const KINDS: Kind[] = [
  { protocol: "vmess", network: "tcp", tls: false },
  { protocol: "vmess", network: "ws", tls: true },
  { protocol: "vless", network: "tcp", tls: false },
];
const VMESS_COUNT = KINDS.filter((kind) => kind.protocol === "vmess").length;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "3000" });
  const core = await startV2rayServer(stack.add);
  const certificate = await apiCertificate(t, stack.add, "localhost");
  const serverId = (await registerServer(t, core.apiPort, { name: "vmess cipher" })).id;
  const user = (await request(t, "POST", "/api/users", { name: "cipher" })).json() as {
    id: string;
    subscription_url: string;
  };
  subscriptionUrl = user.subscription_url;
  for (const kind of KINDS) {
    const template = await templateFor(t, kind);
    const inbound = await createInbound(t, serverId, {
      template_id: template.id,
      port: await freePort(),
      ...(kind.tls ? { certificate_id: certificate.id } : {}),
    });
    assert.equal(inbound.sync_state, "synced", String(inbound.sync_error));
    await grant(t, serverId, inbound.id, { user_id: user.id });
  }
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

type Doc = Record<string, unknown>;

function vmessLinkCiphers(lines: string[]): string[] {
  return lines
    .filter((line) => line.startsWith("vmess://"))
    .map(
      (line) => (JSON.parse(Buffer.from(line.slice(8), "base64").toString("utf8")) as { scy: string }).scy,
    );
}

/** The VMess cipher each entry of `body` names, read as that format's clients read it. */
const CIPHERS: Record<Format, (body: string) => string[]> = {
  base64: (body) => vmessLinkCiphers(Buffer.from(body, "base64").toString("utf8").split("\n")),
  links: (body) => vmessLinkCiphers(body.split("\n")),
  mihomo: (body) =>
    ((parse(body) as { proxies: Doc[] }).proxies ?? [])
      .filter((proxy) => proxy.type === "vmess")
      .map((proxy) => String(proxy.cipher)),
  "sing-box": (body) =>
    (JSON.parse(body) as { outbounds: Doc[] }).outbounds
      .filter((outbound) => outbound.type === "vmess")
      .map((outbound) => String(outbound.security)),
  "xray-json": (body) =>
    (JSON.parse(body) as { outbounds: Doc[] }[]).flatMap((config) =>
      config.outbounds
        .filter((outbound) => outbound.protocol === "vmess")
        .flatMap((outbound) =>
          (outbound.settings as { vnext: { users: { security: string }[] }[] }).vnext.flatMap((server) =>
            server.users.map((user) => user.security),
          ),
        ),
    ),
};

describe("no format writes a VMess security of auto", needs, () => {
  for (const format of FORMATS) {
    test(format, async () => {
      const res = await t.app.inject({ method: "GET", url: `${subscriptionUrl}/${format}` });
      assert.equal(res.statusCode, 200, res.body);
      const ciphers = CIPHERS[format](res.body);
      assert.equal(ciphers.length, VMESS_COUNT, `${format}: one cipher per VMess entry`);
      for (const cipher of ciphers) {
        assert.notEqual(cipher.toLowerCase(), "auto", format);
        assert.ok((VMESS_CIPHERS as readonly string[]).includes(cipher), `${format}: ${cipher}`);
      }
    });
  }
});
