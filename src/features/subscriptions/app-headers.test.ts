// The headers client apps read (issue 48), on whichever dialect DATABASE_URL selects, over real HTTP
// with the fast path in front: support-url, profile-web-page-url, announce (the settings' and a user's
// own), announce-url, routing, hide-settings and the operator's headers whose values are templates,
// read for an active, a limited and an expiring user; reserved names, unknown variables and
// line breaks refused; a user's announcement reaches a cached subscription at once.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { SECURITY_HEADERS } from "../../lib/security-headers.ts";
import { withCacheFastPath } from "./fast-path.ts";

const DAY_MS = 86_400_000;
let t: TestApp;
let server: Server;
let base: string;
let serverId: string;
let inboundId: string;

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1000" });
  serverId = (await registerServer(t, await freePort(), { hostname: "vpn.example.com" })).id;
  const template = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
  inboundId = (await createInbound(t, serverId, { template_id: template.id, port: await freePort() })).id;
  server = createServer(
    withCacheFastPath(t.deps.services.subscriptions, (req, res) => t.app.routing(req, res)),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

type User = { id: string; subscription_url: string; status: string; announce: string | null };

async function newUser(name: string, body: Record<string, unknown> = {}): Promise<User> {
  const res = await request(t, "POST", "/api/users", { name, ...body });
  assert.equal(res.statusCode, 201, res.body);
  const user = res.json() as User;
  await grant(t, serverId, inboundId, { user_id: user.id });
  return user;
}

async function headersOf(path: string): Promise<Headers> {
  const res = await fetch(`${base}${path}`, {
    headers: { "user-agent": "Happ/1.0" },
    signal: AbortSignal.timeout(5000),
  });
  assert.equal(res.status, 200, await res.text());
  await res.arrayBuffer().catch(() => undefined);
  return res.headers;
}

const base64 = (text: string) => `base64:${Buffer.from(text, "utf8").toString("base64")}`;

/**
 * A GET on a socket of its own: the status line, the head's fields in order (without those Node
 * adds or that differ per answer: Date, Connection, Keep-Alive, X-Request-Id) and the body.
 */
async function rawAnswer(path: string, more = ""): Promise<{ status: string; head: string[]; body: string }> {
  const { port } = server.address() as AddressInfo;
  const socket = connect(port, "127.0.0.1");
  socket.setTimeout(5000);
  let data = Buffer.alloc(0);
  return await new Promise((resolve, reject) => {
    socket.on("timeout", () => {
      socket.destroy();
      reject(new Error(`no whole answer in 5 s for ${path}`));
    });
    socket.on("error", reject);
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return;
      const [status = "", ...lines] = data.subarray(0, end).toString("latin1").split("\r\n");
      const length = Number(lines.find((l) => /^content-length:/i.test(l))?.split(":")[1] ?? "0");
      if (data.length < end + 4 + length) return;
      socket.destroy();
      resolve({
        status,
        head: lines.filter((l) => !/^(date|connection|keep-alive|x-request-id):/i.test(l)),
        body: data.subarray(end + 4, end + 4 + length).toString("latin1"),
      });
    });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n${more}\r\n`);
  });
}

describe("headers apps read", () => {
  const settings = {
    support_url: "https://t.me/support",
    profile_web_page_url: "https://panel.example.com/me",
    announce: "Maintenance on Friday",
    announce_url: "https://status.example.com",
    routing: "happ://routing/add/eyJOYW1lIjoiUHJveHkifQ",
    hide_settings: true,
    public_url: "https://sub.example.com",
    custom_headers: [
      { name: "X-Days-Left", value: "{DAYS_LEFT}" },
      { name: "x-left", value: "{DATA_LEFT} left, {STATUS}, until {EXPIRE_DATE}" },
      { name: "x-sub", value: "{SUBSCRIPTION_URL}" },
      { name: "x-user", value: "{USERNAME}" },
      { name: "x-static", value: "plain value" },
    ],
  };

  test("settings with every header save and read back", async () => {
    const res = await request(t, "PUT", "/api/subscription-settings", settings);
    assert.equal(res.statusCode, 200, res.body);
    const stored = (await request(t, "GET", "/api/subscription-settings")).json() as typeof settings;
    for (const [key, value] of Object.entries(settings))
      assert.deepEqual(stored[key as keyof typeof settings], value, key);
  });

  test("each documented header is present with its configured value; templated ones per user (active, limited, expiring)", async () => {
    const active = await newUser("Active Ünïcode");
    const limited = await newUser("Limited", { data_limit_bytes: 1000 });
    await t.deps.database.db
      .updateTable("users")
      .set({ used_bytes: 2000 })
      .where("id", "=", limited.id)
      .execute();
    const limitedNow = await request(t, "PUT", `/api/users/${limited.id}`, { data_limit_bytes: 1000 });
    assert.equal((limitedNow.json() as User).status, "limited");
    const expireAt = new Date(Date.now() + 2.5 * DAY_MS);
    const expiring = await newUser("Expiring", {
      expire_at: expireAt.toISOString(),
      data_limit_bytes: 10 * 2 ** 30,
    });
    const expected = [
      {
        user: active,
        days: "∞",
        left: "∞ left, active, until ∞",
        name: encodeURIComponent("Active Ünïcode").replaceAll("%20", " "),
      },
      { user: limited, days: "∞", left: "0 B left, limited, until ∞", name: "Limited" },
      {
        user: expiring,
        days: "3",
        left: `10 GB left, active, until ${expireAt.toISOString().slice(0, 10)}`,
        name: "Expiring",
      },
    ];
    for (const { user, days, left, name } of expected) {
      const token = user.subscription_url.split("/").at(-1) as string;
      for (const path of [`/sub/${token}`, `/sub/${token}/mihomo`, `/sub/${user.id}/links`]) {
        const headers = await headersOf(path);
        const key = path.split("/")[2];
        assert.equal(headers.get("support-url"), settings.support_url, path);
        assert.equal(headers.get("profile-web-page-url"), settings.profile_web_page_url, path);
        assert.equal(headers.get("announce"), base64(settings.announce), path);
        assert.equal(headers.get("announce-url"), settings.announce_url, path);
        assert.equal(headers.get("routing"), settings.routing, path);
        assert.equal(headers.get("hide-settings"), "1", path);
        assert.equal(headers.get("x-static"), "plain value", path);
        // Header values are ASCII: anything else is percent-encoded (UTF-8).
        assert.equal(headers.get("x-days-left"), encodeURIComponent(days), path);
        assert.equal(headers.get("x-left"), left.replaceAll("∞", encodeURIComponent("∞")), path);
        assert.equal(headers.get("x-sub"), `https://sub.example.com/sub/${key}`, path);
        assert.equal(headers.get("x-user"), name, path);
      }
    }
  });

  test("with the settings' headers the fast path writes formatAnswer()'s head in its order, and the route's fields and body", async () => {
    const user = await newUser("Ordered Ünïcode", { data_limit_bytes: 10 * 2 ** 30 });
    const token = user.subscription_url.split("/").at(-1) as string;
    const subscriptions = t.deps.services.subscriptions;
    // Profile-Web-Page-Url as set, then made from the key (the public URL alone).
    for (const webPage of [settings.profile_web_page_url, null]) {
      const saved = await request(t, "PUT", "/api/subscription-settings", {
        ...settings,
        profile_web_page_url: webPage,
      });
      assert.equal(saved.statusCode, 200, saved.body);
      for (const key of [token, user.id]) {
        await headersOf(`/sub/${key}`); // in memory
        const fast = await rawAnswer(`/sub/${key}`);
        assert.equal(fast.status, "HTTP/1.1 200 OK");
        const made = await subscriptions.respondFormat(key, "base64", undefined);
        const expected: string[] = [];
        const pairs = [...made.headers, ...SECURITY_HEADERS, "content-length", String(made.body?.length)];
        for (let i = 0; i < pairs.length; i += 2) expected.push(`${pairs[i]}: ${pairs[i + 1]}`);
        assert.deepEqual(fast.head, expected, `${key}, web page ${webPage}`);
        assert.equal(fast.body, made.body);
        if (webPage === null)
          assert.ok(fast.head.includes(`profile-web-page-url: https://sub.example.com/sub/${key}`));
        // The route (an uppercase key is not the fast path's) sends the same fields and body.
        const routed = await rawAnswer(`/sub/${key.toUpperCase()}`);
        assert.deepEqual([...routed.head].sort(), [...fast.head].sort());
        assert.equal(routed.body, fast.body);
        // 304 for its ETag, as formatAnswer() answers it.
        const etag = fast.head.find((line) => line.startsWith("etag: "))?.slice(6) ?? "";
        const conditional = await rawAnswer(`/sub/${key}`, `If-None-Match: ${etag}\r\n`);
        assert.equal(conditional.status, "HTTP/1.1 304 Not Modified");
        const notModified = await subscriptions.respondFormat(key, "base64", etag);
        const expected304: string[] = [];
        const pairs304 = [...notModified.headers, ...SECURITY_HEADERS];
        for (let i = 0; i < pairs304.length; i += 2) expected304.push(`${pairs304[i]}: ${pairs304[i + 1]}`);
        assert.deepEqual(conditional.head, expected304);
      }
    }
    await request(t, "PUT", "/api/subscription-settings", settings);
  });

  test("a user's own announce replaces the settings' one, at once on a cached subscription", async () => {
    const user = await newUser("Announced");
    const path = `/sub/${user.subscription_url.split("/").at(-1)}`;
    assert.equal((await headersOf(path)).get("announce"), base64(settings.announce));
    const res = await request(t, "PUT", `/api/users/${user.id}`, { announce: "Your plan ends soon ✈" });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((res.json() as User).announce, "Your plan ends soon ✈");
    for (const suffix of ["", "/sing-box"]) {
      const headers = await headersOf(`${path}${suffix}`);
      assert.equal(headers.get("announce"), base64("Your plan ends soon ✈"), suffix);
      assert.equal(headers.get("support-url"), settings.support_url);
    }
    await request(t, "PUT", `/api/users/${user.id}`, { announce: null });
    assert.equal((await headersOf(path)).get("announce"), base64(settings.announce));
    // With no settings headers at all the plain fast path answers; a user's own one still goes out.
    await request(t, "PUT", `/api/subscription-settings`, {
      ...Object.fromEntries(Object.keys(settings).map((key) => [key, null])),
      hide_settings: false,
      custom_headers: [],
    });
    await request(t, "PUT", `/api/users/${user.id}`, { announce: "only mine" });
    const headers = await headersOf(path);
    assert.equal(headers.get("announce"), base64("only mine"));
    assert.equal(headers.get("support-url"), null);
    assert.equal(headers.get("hide-settings"), null);
  });

  test("bad headers are refused: reserved or non-token names, unknown variables, line breaks, non-happ routing", async () => {
    const put = (body: Record<string, unknown>) => request(t, "PUT", "/api/subscription-settings", body);
    const header = (name: string, value: string) => ({ custom_headers: [{ name, value }] });
    for (const body of [
      header("x bad", "v"),
      header("x:bad", "v"),
      header("x-ok", "a\r\nset-cookie: x=1"),
      header("x-ok", "a\u2028b"),
      header("x-ok", "a\u0085b"),
      header("x-ok", ""),
      { announce: "a\u202eb" },
      { hide_settings: "yes" },
    ]) {
      expectProblem(await put(body), 400, "validation_failed");
    }
    for (const body of [
      header("Content-Type", "text/html"),
      header("Subscription-Userinfo", "upload=0"),
      header("x-ok", "{TOKEN}"),
      {
        custom_headers: [
          { name: "x-a", value: "1" },
          { name: "X-A", value: "2" },
        ],
      },
      { routing: "https://example.com" },
      { profile_web_page_url: "javascript:alert(1)" },
    ]) {
      expectProblem(await put(body), 422, "subscription_settings_invalid");
    }
    expectProblem(
      await request(t, "POST", "/api/users", { name: "x", announce: "a\rb" }),
      400,
      "validation_failed",
    );
  });
});
