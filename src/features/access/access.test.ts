// Access grants, revocation, a user's access records and the client configuration endpoints, on
// whichever dialect DATABASE_URL selects. Grants go to a real V2Ray 4.34 core, and real clients show
// what the core holds; a server whose core nobody runs shows that nothing hangs.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  createInbound,
  expectBlocked,
  expectCarries,
  grant,
  registerServer,
  startClient,
  subscriptionLinks,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import {
  CleanupStack,
  startHttpServer,
  startV2rayServer,
  type V2rayServer,
} from "../../../test/support/v2ray.ts";

const needs = requires("v2ray", "ss-local");

const stack = new CleanupStack();
const BODY = randomBytes(20_000);
let t: TestApp;
let core: V2rayServer;
let coreServer: string;
let downServer: string;
let httpPort: number;
let vlessTemplate: string;
let ssTemplate: string;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1500" });
  core = await startV2rayServer(stack.add);
  coreServer = (await registerServer(t, core.apiPort, { name: "access core" })).id;
  downServer = (await registerServer(t, await freePort(), { name: "access down" })).id;
  httpPort = await startHttpServer(stack.add, BODY);
  vlessTemplate = (await templateFor(t, { protocol: "vless", network: "tcp", tls: false })).id;
  ssTemplate = (
    await templateFor(t, { protocol: "shadowsocks", network: "tcp", tls: false, method: "aes-256-gcm" })
  ).id;
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

const api = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) =>
  request(t, method, url, payload);
const UNKNOWN = "00000000-0000-4000-8000-000000000000";

async function inboundOn(server: string, template = vlessTemplate) {
  return createInbound(t, server, { template_id: template, port: await freePort() });
}

async function clientOf(userId: string): Promise<number> {
  const [link] = await subscriptionLinks(t, userId);
  assert.ok(link !== undefined, "the user has a link");
  const target = decodeLink(link);
  return startClient(stack.add, target.protocol === "shadowsocks" ? "ss-local" : "v2ray", target);
}

describe("granting access", needs, () => {
  test("a grant with a name creates the user; the record has level 0, a proxy id, and the user is on the core", async () => {
    const inbound = await inboundOn(coreServer);
    const access = await grant(t, coreServer, inbound.id, {
      name: "  Nadia  ",
      comment: "new",
      telegram_id: 777,
    });
    assert.deepEqual(Object.keys(access).sort(), [
      "created_at",
      "downlink_bytes",
      "id",
      "is_active",
      "is_own",
      "level",
      "proxy_user_id",
      "server_inbound_id",
      "sync_error",
      "sync_state",
      "uplink_bytes",
      "user_id",
    ]);
    assert.equal(access.level, 0);
    assert.equal(access.is_active, true);
    assert.equal(access.server_inbound_id, inbound.id);
    assert.match(access.proxy_user_id, /^u-[0-9a-f]{16}$/);
    assert.equal(access.sync_state, "synced", String(access.sync_error));
    const user = (await api("GET", `/api/users/${access.user_id}`)).json();
    assert.deepEqual([user.name, user.comment, user.telegram_id], ["Nadia", "new", 777]);
    await expectCarries(await clientOf(access.user_id), httpPort, BODY, "the new grant's client");
    assert.ok(core.isAlive());
  });

  test("an existing user is granted by user_id with a level; a second grant on the same inbound is 409", async () => {
    const inbound = await inboundOn(coreServer);
    const user = (await api("POST", "/api/users", { name: "Existing" })).json();
    const access = await grant(t, coreServer, inbound.id, { user_id: user.id, level: 0 });
    assert.equal(access.user_id, user.id);
    const again = await api("POST", `/api/servers/${coreServer}/inbounds/${inbound.id}/users`, {
      user_id: user.id,
    });
    expectProblem(again, 409, "access_exists");
    assert.ok(core.isAlive());
  });

  test("missing name, unknown user, inbound or server, and bad levels are refused before anything is stored", async () => {
    const inbound = await inboundOn(downServer);
    const url = `/api/servers/${downServer}/inbounds/${inbound.id}/users`;
    assert.equal(expectProblem(await api("POST", url, {}), 400, "validation_failed")[0]?.path, "body.name");
    const unknownUser = await api("POST", url, { user_id: UNKNOWN });
    assert.equal(expectProblem(unknownUser, 404, "not_found")[0]?.path, "body.user_id");
    expectProblem(
      await api("POST", `/api/servers/${downServer}/inbounds/${UNKNOWN}/users`, { name: "never-stored-zq" }),
      404,
      "not_found",
    );
    expectProblem(
      await api("POST", `/api/servers/${UNKNOWN}/inbounds/${inbound.id}/users`, { name: "never-stored-zq" }),
      404,
      "not_found",
    );
    expectProblem(
      await api("POST", `/api/servers/${coreServer}/inbounds/${inbound.id}/users`, {
        name: "never-stored-zq",
      }),
      404,
      "not_found",
    );
    for (const level of [-1, 256, 1.5]) {
      const errors = expectProblem(
        await api("POST", url, { name: "never-stored-zq", level }),
        400,
        "validation_failed",
      );
      assert.equal(errors[0]?.path, "body.level");
    }
    assert.deepEqual((await api("GET", "/api/users/search?q=never-stored-zq")).json(), []);
  });

  test("on a core that is down the grant is stored 'pending' and answered within the deadline", async () => {
    const inbound = await inboundOn(downServer);
    const started = Date.now();
    const access = await grant(t, downServer, inbound.id, { name: "Patient" });
    assert.ok(Date.now() - started < 4500, `took ${Date.now() - started} ms`);
    assert.equal(access.sync_state, "pending");
    assert.ok(access.sync_error);
  });

  test("a V2Ray shadowsocks inbound takes one user: a second grant is 422 core_capacity; after revoking, another fits", async () => {
    const inbound = await inboundOn(coreServer, ssTemplate);
    assert.equal(inbound.sync_state, "synced");
    const first = await grant(t, coreServer, inbound.id, { name: "SS one" });
    assert.equal(first.sync_state, "synced", String(first.sync_error));
    const firstClient = await clientOf(first.user_id);
    await expectCarries(firstClient, httpPort, BODY, "the one shadowsocks user");
    const second = await api("POST", `/api/servers/${coreServer}/inbounds/${inbound.id}/users`, {
      name: "SS two",
    });
    const problem = second.json();
    expectProblem(second, 422, "core_capacity");
    assert.match(problem.detail, /one user per shadowsocks inbound/);
    assert.deepEqual((await api("GET", "/api/users/search?q=SS%20two")).json(), [], "no user was created");

    const revoke = await api(
      "DELETE",
      `/api/servers/${coreServer}/inbounds/${inbound.id}/users/${first.proxy_user_id}`,
    );
    assert.equal(revoke.statusCode, 204);
    await expectBlocked(firstClient, httpPort, BODY, "the revoked shadowsocks user");
    const third = await grant(t, coreServer, inbound.id, { name: "SS three" });
    assert.equal(third.sync_state, "synced", String(third.sync_error));
    await expectCarries(await clientOf(third.user_id), httpPort, BODY, "the next shadowsocks user");
    assert.ok(core.isAlive());
  });
});

describe("revoking access", needs, () => {
  test("by proxy_user_id or by the user's uuid: 204, the core drops the user, and the grant is gone", async () => {
    const inbound = await inboundOn(coreServer);
    const byProxy = await grant(t, coreServer, inbound.id, { name: "by proxy id" });
    const byUuid = await grant(t, coreServer, inbound.id, { name: "by uuid" });
    const clients = [await clientOf(byProxy.user_id), await clientOf(byUuid.user_id)];
    for (const socks of clients) await expectCarries(socks, httpPort, BODY, "before revocation");
    const base = `/api/servers/${coreServer}/inbounds/${inbound.id}/users`;
    assert.equal((await api("DELETE", `${base}/${byProxy.proxy_user_id}`)).statusCode, 204);
    assert.equal((await api("DELETE", `${base}/${byUuid.user_id.toUpperCase()}`)).statusCode, 204);
    for (const socks of clients) await expectBlocked(socks, httpPort, BODY, "after revocation");
    assert.deepEqual((await api("GET", `/api/users/${byProxy.user_id}/access`)).json(), []);
    expectProblem(await api("DELETE", `${base}/${byProxy.proxy_user_id}`), 404, "not_found");
    expectProblem(await api("DELETE", `${base}/u-0000000000000000`), 404, "not_found");
    expectProblem(await api("DELETE", `${base}/has%20space`), 400, "validation_failed");
    assert.ok(core.isAlive());
  });

  test("deleting a user takes their grants off the core first", async () => {
    const inbound = await inboundOn(coreServer);
    const access = await grant(t, coreServer, inbound.id, { name: "leaving" });
    const socks = await clientOf(access.user_id);
    await expectCarries(socks, httpPort, BODY, "before the user is deleted");
    assert.equal((await api("DELETE", `/api/users/${access.user_id}`)).statusCode, 204);
    await expectBlocked(socks, httpPort, BODY, "after the user is deleted");
    expectProblem(await api("GET", `/api/users/${access.user_id}/access`), 404, "not_found");
    assert.ok(core.isAlive());
  });

  test("a removal that cannot reach its core is queued, and the revoke still succeeds", async () => {
    const down = await registerServer(t, core.apiPort, { name: "soon down" });
    const inbound = await inboundOn(down.id);
    const access = await grant(t, down.id, inbound.id, { name: "queued" });
    assert.equal(access.sync_state, "synced");
    await api("PUT", `/api/servers/${down.id}`, { grpc_port: await freePort() }); // the core moves away
    const res = await api(
      "DELETE",
      `/api/servers/${down.id}/inbounds/${inbound.id}/users/${access.proxy_user_id}`,
    );
    assert.equal(res.statusCode, 204);
    const queued = await t.deps.database.db
      .selectFrom("core_removals")
      .select(["inbound_tag", "email"])
      .where("server_id", "=", down.id)
      .execute();
    assert.deepEqual(queued, [{ inbound_tag: inbound.tag, email: access.proxy_user_id }]);
  });
});

describe("access records and client configurations", needs, () => {
  test("GET /api/users/{id}/access lists grants; include_uris adds uri, protocol, server_name, inbound_tag", async () => {
    const a = await inboundOn(downServer);
    const b = await inboundOn(downServer, ssTemplate);
    const user = (await api("POST", "/api/users", { name: "Two Grants" })).json();
    await grant(t, downServer, a.id, { user_id: user.id });
    await grant(t, downServer, b.id, { user_id: user.id });
    const plain = (await api("GET", `/api/users/${user.id}/access`)).json();
    assert.equal(plain.length, 2);
    assert.equal(plain[0].uri, undefined);
    const rich = (await api("GET", `/api/users/${user.id}/access?include_uris=true`)).json();
    assert.deepEqual(
      rich.map((r: Record<string, string>) => [r.protocol, r.server_name, r.inbound_tag]),
      [
        ["vless", "access down", a.tag],
        ["shadowsocks", "access down", b.tag],
      ],
    );
    assert.match(rich[0].uri, /^vless:\/\//);
    assert.match(rich[1].uri, /^ss:\/\//);
    expectProblem(await api("GET", `/api/users/${UNKNOWN}/access`), 404, "not_found");
    expectProblem(
      await api("GET", `/api/users/${user.id}/access?include_uris=maybe`),
      400,
      "validation_failed",
    );
  });

  test("the three configs endpoints return {user_id, server_name, inbound_tag, protocol, remark, uri, qr_code: null}", async () => {
    const inbound = await inboundOn(downServer);
    const one = await grant(t, downServer, inbound.id, { name: "Config One" });
    const two = await grant(t, downServer, inbound.id, { name: "Config Two" });
    const mine = (await api("GET", `/api/users/${one.user_id}/configs`)).json();
    assert.equal(mine.length, 1);
    assert.deepEqual(Object.keys(mine[0]).sort(), [
      "inbound_tag",
      "protocol",
      "qr_code",
      "remark",
      "server_name",
      "uri",
      "user_id",
    ]);
    assert.equal(mine[0].remark, `access down ${inbound.tag}`);
    assert.deepEqual(
      [mine[0].user_id, mine[0].server_name, mine[0].inbound_tag, mine[0].protocol, mine[0].qr_code],
      [one.user_id, "access down", inbound.tag, "vless", null],
    );
    const single = (await api("GET", `/api/users/${one.user_id}/access/${inbound.id}/config`)).json();
    assert.deepEqual(single, mine[0]);
    const ofInbound = (await api("GET", `/api/servers/${downServer}/inbounds/${inbound.id}/configs`)).json();
    assert.deepEqual(
      ofInbound.map((c: { user_id: string }) => c.user_id),
      [one.user_id, two.user_id],
    );
    const target = decodeLink(mine[0].uri);
    assert.equal(target.host, "127.0.0.1");
    assert.equal(target.port, inbound.port_override);
    expectProblem(await api("GET", `/api/users/${two.user_id}/access/${UNKNOWN}/config`), 404, "not_found");
    // ?include_qr=true: the link's QR code as an SVG data: URI (the subscription page's Chromium
    // test decodes the same drawing with jsqr); anything else than a boolean is a 400.
    for (const url of [
      `/api/users/${one.user_id}/configs?include_qr=true`,
      `/api/servers/${downServer}/inbounds/${inbound.id}/configs?include_qr=true`,
    ]) {
      const [withQr] = (await api("GET", url)).json() as { uri: string; qr_code: string }[];
      assert.match(withQr?.qr_code ?? "", /^data:image\/svg\+xml;base64,/);
      const svg = Buffer.from((withQr?.qr_code ?? "").split(",")[1] ?? "", "base64").toString("utf8");
      assert.match(svg, /^<svg[\s\S]*<\/svg>$/);
    }
    const qrSingle = (
      await api("GET", `/api/users/${one.user_id}/access/${inbound.id}/config?include_qr=true`)
    ).json();
    assert.match(qrSingle.qr_code, /^data:image\/svg\+xml;base64,/);
    expectProblem(
      await api("GET", `/api/users/${one.user_id}/configs?include_qr=maybe`),
      400,
      "validation_failed",
    );
    expectProblem(await api("GET", `/api/users/${UNKNOWN}/configs`), 404, "not_found");
    expectProblem(
      await api("GET", `/api/servers/${downServer}/inbounds/${UNKNOWN}/configs`),
      404,
      "not_found",
    );
  });
});
