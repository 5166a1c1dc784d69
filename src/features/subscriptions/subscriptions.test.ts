// GET /sub/{user_id} on whichever dialect DATABASE_URL selects: status codes, body, headers, which
// grants make links, and that every starter template's link passes the escaping rules. The renderer
// is also tested as the pure function it is. The cache in front of it: cache-invalidation.test.ts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink, escapingProblems } from "../../../test/support/link-decoder.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  apiCertificate,
  createInbound,
  grant,
  registerServer,
  subscriptionLinks,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import { EMPTY_SUBSCRIPTION_LINE } from "../../links/subscription.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import { installStarters, STARTER_NAMES } from "../templates/starters.ts";
import { renderSubscription } from "./subscription.ts";

const stack = new CleanupStack();
let t: TestApp;
let serverId: string;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1000" });
  const certificate = await apiCertificate(t, stack.add, "vpn.example.com");
  // Nobody runs this core: inbounds stay 'pending', links are what the database says.
  serverId = (
    await registerServer(t, await freePort(), {
      name: "Frankfurt 1",
      hostname: "vpn.example.com",
      default_certificate_id: certificate.id,
    })
  ).id;
});
after(async () => {
  await t.close();
  await stack.run();
});

const sub = (id: string) => t.app.inject({ method: "GET", url: `/sub/${id}` });

describe("GET /sub/{user_id}", () => {
  test("is public and 404 for an unknown user or anything that is not a uuid, never 400 or 500", async () => {
    for (const id of [
      "00000000-0000-4000-8000-000000000000",
      "not-a-uuid",
      "1",
      "%27%20OR%201%3D1",
      "x".repeat(90),
    ]) {
      const res = await sub(id);
      expectProblem(res, 404, "not_found");
    }
  });

  test("a user without configurations gets 200 and the base64 of one comment line", async () => {
    const user = (await request(t, "POST", "/api/users", { name: "Empty" })).json();
    const res = await sub(user.id);
    assert.equal(res.statusCode, 200);
    assert.equal(Buffer.from(res.body, "base64").toString("utf8"), EMPTY_SUBSCRIPTION_LINE);
    assert.equal(res.headers["subscription-userinfo"], "upload=0; download=0; total=0; expire=0");
  });

  test("headers: userinfo from the period's usage, title, update interval, file name", async () => {
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
    const access = await grant(t, serverId, inbound.id, { name: "Zoë Ünïcode" });
    await t.deps.database.db
      .updateTable("user_access")
      .set({ uplink_bytes: 1234, downlink_bytes: 5_000_000_000 })
      .where("id", "=", access.id)
      .execute();
    // Subscription-Userinfo tells the period's used_bytes, split in the counters' proportion.
    await t.deps.database.db
      .updateTable("users")
      .set({ used_bytes: 5_000_001_234 })
      .where("id", "=", access.user_id)
      .execute();
    const res = await sub(access.user_id.toUpperCase());
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], "text/plain; charset=utf-8");
    assert.equal(res.headers["subscription-userinfo"], "upload=1234; download=5000000000; total=0; expire=0");
    const title = String(res.headers["profile-title"]);
    assert.match(title, /^base64:/);
    assert.equal(Buffer.from(title.slice(7), "base64").toString("utf8"), "Portcullis – Zoë Ünïcode");
    assert.equal(res.headers["profile-update-interval"], "12");
    assert.equal(
      res.headers["content-disposition"],
      `attachment; filename="Zoe-Unicode"; filename*=UTF-8''Zo%C3%AB%20%C3%9Cn%C3%AFcode`,
    );
  });

  test("links come from active grants on active inbounds, in grant order, with host, port and remark", async () => {
    const user = (await request(t, "POST", "/api/users", { name: "Ordered" })).json();
    const kinds = [
      { protocol: "vmess", network: "ws", tls: true },
      { protocol: "trojan", network: "tcp", tls: true },
      { protocol: "vless", network: "ws", tls: false },
    ] as const;
    const inbounds = [];
    for (const kind of kinds) {
      const template = await templateFor(t, kind);
      const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
      await grant(t, serverId, inbound.id, { user_id: user.id });
      inbounds.push(inbound);
    }
    const targets = (await subscriptionLinks(t, user.id)).map(decodeLink);
    assert.deepEqual(
      targets.map((target) => [target.protocol, target.host, target.port, target.remark]),
      inbounds.map((inbound, i) => [
        kinds[i]?.protocol,
        "vpn.example.com",
        inbound.port_override,
        `Frankfurt 1 ${inbound.tag}`,
      ]),
    );
    const [first] = targets;
    assert.ok(first?.protocol === "vmess" && first.security.type === "tls");
    assert.equal(first.security.sni, "vpn.example.com");
    assert.ok(first.transport.type === "ws");
    assert.equal(first.transport.host, "vpn.example.com");

    const off = await request(t, "PUT", `/api/servers/${serverId}/inbounds/${inbounds[1]?.id}`, {
      is_active: false,
    });
    assert.equal(off.statusCode, 200, off.body);
    const after = (await subscriptionLinks(t, user.id)).map((link) => decodeLink(link).protocol);
    assert.deepEqual(after, ["vmess", "vless"]);
  });

  test("a template update and a server rename reach the links", async () => {
    const server = await registerServer(t, await freePort(), {
      name: "Before Rename",
      hostname: "old.example.com",
    });
    const template = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
    const access = await grant(t, server.id, inbound.id, { name: "Follows Changes" });
    const read = async () => {
      const [link] = await subscriptionLinks(t, access.user_id);
      const target = decodeLink(link ?? "");
      assert.ok(target.protocol === "vless" && target.transport.type === "ws");
      return [target.host, target.remark, target.transport.path];
    };
    assert.deepEqual(await read(), ["old.example.com", `Before Rename ${inbound.tag}`, "/vless-ws"]);
    const variables = [{ name: "ws_path", default: "/moved" }];
    assert.equal((await request(t, "PUT", `/api/templates/${template.id}`, { variables })).statusCode, 200);
    const renamed = { name: "After Rename", hostname: "new.example.com" };
    assert.equal((await request(t, "PUT", `/api/servers/${server.id}`, renamed)).statusCode, 200);
    assert.deepEqual(await read(), ["new.example.com", `After Rename ${inbound.tag}`, "/moved"]);
  });

  test("every starter template gives a link that decodes and has nothing raw to misread", async () => {
    const outcomes = await installStarters(t.deps.services.templates);
    assert.equal(outcomes.length, STARTER_NAMES.length);
    const user = (await request(t, "POST", "/api/users", { name: "Starter Sampler" })).json();
    for (const template of await t.deps.services.templates.list()) {
      if (!outcomes.some((o) => o.name === template.name)) continue;
      const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
      await grant(t, serverId, inbound.id, { user_id: user.id });
    }
    const links = await subscriptionLinks(t, user.id);
    assert.equal(links.length, STARTER_NAMES.length);
    for (const link of links) {
      assert.deepEqual(escapingProblems(link), [], link);
      assert.equal(decodeLink(link).host, "vpn.example.com");
    }
    const schemes = links.map((link) => link.slice(0, link.indexOf(":"))).sort();
    assert.deepEqual(schemes, ["ss", "ss", "trojan", "vless", "vless", "vless", "vmess"]);
    const reality = links
      .map(decodeLink)
      .find(
        (target) =>
          target.protocol === "vless" &&
          target.security.type === "reality" &&
          target.transport.type === "tcp",
      );
    assert.ok(reality?.protocol === "vless" && reality.security.type === "reality");
    assert.match(reality.security.publicKey, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(reality.credential.flow, "xtls-rprx-vision");
    const ss2022 = links
      .map(decodeLink)
      .find((target) => target.protocol === "shadowsocks" && target.credential.method.startsWith("2022"));
    assert.ok(ss2022?.protocol === "shadowsocks");
    assert.match(ss2022.credential.password, /^[A-Za-z0-9+/]+=*:[A-Za-z0-9+/]+=*$/, "serverKey:userKey");
  });
});

describe("renderSubscription (pure)", () => {
  const params: LinkParams = {
    version: 1,
    protocol: "trojan",
    host: "a.example",
    port: 443,
    remark: "A same",
    transport: { type: "tcp" },
    security: { type: "tls", sni: "a.example" },
  };

  test("duplicate remarks are made unique; inactive inbounds count traffic but give no link", () => {
    const rendered = renderSubscription({
      userName: "Bob",
      grants: [
        { credential: "p1", link_params: params, uplink_bytes: 1, downlink_bytes: 2 },
        { credential: "p2", link_params: params, uplink_bytes: 10, downlink_bytes: 20 },
        { credential: "p3", link_params: null, uplink_bytes: 100, downlink_bytes: 200 },
      ],
    });
    const links = Buffer.from(rendered.body, "base64").toString("utf8").split("\n");
    assert.deepEqual(
      links.map((link) => decodeLink(link).remark),
      ["A same", "A same (2)"],
    );
    assert.equal(rendered.headers.userinfo, "upload=111; download=222; total=0; expire=0");
    assert.equal(rendered.headers.disposition, 'attachment; filename="Bob"');
    assert.equal(rendered.skipped, 0);
  });

  test("a grant whose link cannot be written is left out and counted, not fatal", () => {
    const rendered = renderSubscription({
      userName: "carol",
      grants: [
        { credential: "ok", link_params: params, uplink_bytes: 0, downlink_bytes: 0 },
        { credential: "", link_params: params, uplink_bytes: 0, downlink_bytes: 0 },
      ],
    });
    assert.equal(Buffer.from(rendered.body, "base64").toString("utf8").split("\n").length, 1);
    assert.equal(rendered.skipped, 1);
    assert.equal(rendered.headers.disposition, 'attachment; filename="carol"');
  });
});
