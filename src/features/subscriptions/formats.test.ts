// Every format through the engine, on whichever dialect DATABASE_URL selects, over real HTTP with the
// fast path in front (as app.ts composes it): each format equals the pure renderer's document for the
// user's links, validates (mihomo against meta-json-schema, sing-box against the repo's 1.12 schema),
// is answered from memory after the first read, and follows grants, revokes, template changes,
// token rotation and settings changes at once. Real User-Agent strings pick the intended format; a
// browser gets the page. Tokens, the by-id switch, settings validation (422 with JSON paths).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { Ajv } from "ajv";
import { parse as parseYaml } from "yaml";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  apiCertificate,
  createInbound,
  grant,
  kindTemplate,
  registerServer,
} from "../../../test/support/provisioning.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";
import { CleanupStack } from "../../../test/support/v2ray.ts";
import { SINGBOX_SCHEMA } from "../../links/formats/singbox-schema.ts";
import { installStarters } from "../templates/starters.ts";
import { withCacheFastPath } from "./fast-path.ts";

const require = createRequire(import.meta.url);
const ajv = new Ajv({ strict: false, allErrors: true });
const validateMihomo = ajv.compile(
  JSON.parse(
    readFileSync(require.resolve("meta-json-schema/schemas/meta-json-schema.json"), "utf8"),
  ) as object,
);
const validateSingbox = ajv.compile(SINGBOX_SCHEMA);

const stack = new CleanupStack();
let t: TestApp;
let server: Server;
let base: string;
let serverId: string;
let user: { id: string; subscription_url: string };
const inboundIds: string[] = [];
const fellThrough: string[] = [];

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1000" });
  const certificate = await apiCertificate(t, stack.add, "vpn.example.com");
  serverId = (
    await registerServer(t, await freePort(), {
      name: "Frankfurt 1",
      hostname: "vpn.example.com",
      default_certificate_id: certificate.id,
    })
  ).id;
  await installStarters(t.deps.services.templates);
  const templates = (await request(t, "GET", "/api/templates")).json() as { id: string; name: string }[];
  user = (await request(t, "POST", "/api/users", { name: "Алиса ✈" })).json() as typeof user;
  // Every starter template (REALITY, WebSocket+TLS, TCP+TLS, gRPC, Shadowsocks 2022 …) on this user.
  for (const template of templates) {
    const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
    inboundIds.push(inbound.id);
    await grant(t, serverId, inbound.id, { user_id: user.id });
  }
  server = createServer(
    withCacheFastPath(t.deps.services.subscriptions, (req, res) => {
      fellThrough.push(`${req.method} ${req.url}`);
      t.app.routing(req, res);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
  await stack.run();
});

type Answer = { status: number; headers: Headers; body: string; viaFastify: boolean };

async function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const before = fellThrough.length;
  const res = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
  return {
    status: res.status,
    headers: res.headers,
    body: await res.text(),
    viaFastify: fellThrough.length > before,
  };
}

const token = () => user.subscription_url.split("/").at(-1) as string;

describe("formats by path and query", () => {
  test("the user record carries subscription_url /sub/{32 hex}, and the token serves what the id does", async () => {
    assert.match(user.subscription_url, /^\/sub\/[0-9a-f]{32}$/);
    const byId = await get(`/sub/${user.id}`);
    const byToken = await get(`/sub/${token()}`);
    assert.equal(byId.status, 200);
    assert.equal(byToken.body, byId.body);
  });

  test("mihomo: valid against meta-json-schema, one proxy per link, groups over exactly those", async () => {
    const first = await get(`/sub/${token()}/mihomo`);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get("content-type"), "text/yaml; charset=utf-8");
    const doc = parseYaml(first.body) as {
      proxies: { name: string }[];
      "proxy-groups": { proxies: string[] }[];
    };
    assert.ok(validateMihomo(doc), JSON.stringify(validateMihomo.errors?.slice(0, 3)));
    const links = (await get(`/sub/${token()}/links`)).body.split("\n");
    const leftOut = first.body.split("\n").filter((line) => line.startsWith("# left out:"));
    assert.equal(doc.proxies.length + leftOut.length, links.length);
    assert.deepEqual(
      doc["proxy-groups"][1]?.proxies,
      doc.proxies.map((p) => p.name),
    );
    const again = await get(`/sub/${token()}/mihomo`);
    assert.equal(again.body, first.body);
    assert.equal(again.viaFastify, false, "answered from memory");
  });

  test("sing-box: valid against the 1.12 schema; ?format= gives the same bytes as the path", async () => {
    const byPath = await get(`/sub/${token()}/sing-box`);
    assert.equal(byPath.headers.get("content-type"), "application/json; charset=utf-8");
    const doc = JSON.parse(byPath.body) as object;
    assert.ok(validateSingbox(doc), JSON.stringify(validateSingbox.errors?.slice(0, 3)));
    const byQuery = await get(`/sub/${token()}?format=sing-box`);
    assert.equal(byQuery.body, byPath.body);
    assert.equal(byQuery.viaFastify, false);
  });

  test("documents carry non-ASCII text as UTF-8: the same bytes from memory as from the route", async () => {
    const before = (await request(t, "GET", "/api/subscription-settings")).json() as {
      mihomo_base: string;
      singbox_base: object;
    };
    const group = "Авто ✈ 自动 خودکار";
    const saved = await request(t, "PUT", "/api/subscription-settings", {
      mihomo_base: `mode: rule\nproxy-groups:\n  - name: ${group}\n    type: select\n    proxies: ['{{all}}']\nrules:\n  - MATCH,${group}\n`,
      singbox_base: {
        outbounds: [{ type: "selector", tag: group, outbounds: ["{{all}}"] }],
        route: { final: group },
      },
    });
    assert.equal(saved.statusCode, 200, saved.body);
    try {
      for (const format of ["mihomo", "sing-box"]) {
        await get(`/sub/${token()}/${format}`);
        const fromMemory = await get(`/sub/${token()}/${format}`);
        const viaRoute = await get(`/sub/${token()}/${format}`, { "x-request-id": "route-please" });
        assert.equal(fromMemory.viaFastify, false, format);
        assert.equal(viaRoute.viaFastify, true, format);
        assert.ok(fromMemory.body.includes(group), `${format}: ${fromMemory.body.slice(0, 300)}`);
        assert.equal(fromMemory.body, viaRoute.body, format);
        for (const answer of [fromMemory, viaRoute]) {
          assert.equal(Number(answer.headers.get("content-length")), Buffer.byteLength(answer.body), format);
        }
      }
    } finally {
      const restored = await request(t, "PUT", "/api/subscription-settings", {
        mihomo_base: before.mihomo_base,
        singbox_base: before.singbox_base,
      });
      assert.equal(restored.statusCode, 200, restored.body);
    }
  });

  test("xray-json: one complete config per link; links: the base64 body decoded", async () => {
    const configs = JSON.parse((await get(`/sub/${user.id}/xray-json`)).body) as { remarks: string }[];
    const links = await get(`/sub/${user.id}/links`);
    assert.equal(configs.length, links.body.split("\n").length);
    const base64 = await get(`/sub/${user.id}`);
    assert.equal(links.body, Buffer.from(base64.body, "base64").toString("utf8"));
  });

  test("each format has its own ETag; If-None-Match gives 304 on the fast path", async () => {
    const tags = new Set<string>();
    for (const format of ["base64", "links", "mihomo", "sing-box", "xray-json"]) {
      const answer = await get(`/sub/${token()}/${format}`);
      const etag = answer.headers.get("etag") ?? "";
      tags.add(etag);
      const cached = await get(`/sub/${token()}/${format}`, { "if-none-match": etag });
      assert.deepEqual([cached.status, cached.viaFastify], [304, false], format);
    }
    assert.equal(tags.size, 5);
  });

  test("the route (inject) gives the fast path's bytes and headers for every format", async () => {
    for (const format of ["base64", "links", "mihomo", "sing-box", "xray-json"]) {
      const fast = await get(`/sub/${token()}/${format}`);
      const injected = await t.app.inject({ method: "GET", url: `/sub/${token().toUpperCase()}/${format}` });
      assert.equal(injected.body, fast.body, format);
      for (const name of [
        "content-type",
        "etag",
        "profile-title",
        "subscription-userinfo",
        "content-disposition",
      ]) {
        assert.equal(injected.headers[name], fast.headers.get(name), `${format} ${name}`);
      }
      assert.equal(fast.headers.get("x-content-type-options"), "nosniff");
    }
  });

  test("unknown formats, keys and shapes are 404 problems, never 400 or 500", async () => {
    for (const path of [
      `/sub/${token()}/clash-premium`,
      `/sub/${token()}?format=yaml`,
      "/sub/0123456789abcdef0123456789abcdef",
      "/sub/0123456789abcdef0123456789abcdeg/mihomo",
      `/sub/${token()}x`,
    ]) {
      const answer = await get(path);
      assert.equal(answer.status, 404, path);
      assert.equal(answer.headers.get("content-type"), "application/problem+json; charset=utf-8", path);
    }
  });
});

/** Real User-Agent strings of the apps (as they send them) and the format each must get. */
const USER_AGENTS: [string, string][] = [
  ["clash-verge/v2.2.3", "mihomo"],
  ["Clash-Verge/1.3.8", "mihomo"],
  ["ClashMetaForAndroid/2.11.4.Meta", "mihomo"],
  ["FlClash/v0.8.80 clash-verge Platform/android", "mihomo"],
  ["mihomo/1.19.10", "mihomo"],
  ["clash.meta", "mihomo"],
  ["Stash/2.4.7 Clash/1.18.0", "mihomo"],
  ["SFA/1.11.9 (581; sing-box 1.11.9; language zh_CN)", "sing-box"],
  ["SFI/1.12.2 (Build 1; sing-box 1.12.2; language en_US)", "sing-box"],
  ["SFM/1.12.0 (sing-box 1.12.0)", "sing-box"],
  ["HiddifyNext/2.5.7 (android) like ClashMeta v2ray sing-box", "sing-box"],
  ["Karing/1.1.2.606 (android)", "sing-box"],
  ["v2rayN/7.10.5", "xray-json"],
  ["v2rayN/6.23", "base64"],
  ["v2rayNG/1.9.45", "xray-json"],
  ["v2rayNG/1.8.19", "base64"],
  ["Happ/3.6.1", "xray-json"],
  ["Streisand/1.6.48 CFNetwork/1568.300.101 Darwin/24.2.0", "xray-json"],
  ["V2Box/9.4.3", "xray-json"],
  ["ktor-client", "xray-json"],
  ["Shadowrocket/2070 CFNetwork/1496.0.7 Darwin/23.5.0", "base64"],
  ["Go-http-client/1.1", "base64"],
  ["curl/8.5.0", "base64"],
];

const TYPES: Record<string, string> = {
  base64: "text/plain",
  mihomo: "text/yaml",
  "sing-box": "application/json",
  "xray-json": "application/json",
};

describe("format by User-Agent", () => {
  test(`${USER_AGENTS.length} real client User-Agents get their format, from memory`, async () => {
    await get(`/sub/${token()}`); // read once
    for (const [userAgent, format] of USER_AGENTS) {
      const answer = await get(`/sub/${token()}`, { "user-agent": userAgent, accept: "*/*" });
      assert.equal(answer.status, 200, userAgent);
      assert.equal(answer.headers.get("content-type")?.split(";")[0], TYPES[format], userAgent);
      if (format === "xray-json") assert.ok(Array.isArray(JSON.parse(answer.body)), userAgent);
      if (format === "base64") assert.match(answer.body, /^[A-Za-z0-9+/]+=*$/, userAgent);
      assert.equal(answer.viaFastify, false, userAgent);
    }
  });

  test("an explicit format wins over the User-Agent", async () => {
    const answer = await get(`/sub/${token()}/base64`, { "user-agent": "clash-verge/v2.2.3" });
    assert.equal(answer.headers.get("content-type"), "text/plain; charset=utf-8");
  });

  test("a browser gets the page (no external origin, a nonce policy, no framing); an app asking HTML does not", async () => {
    const browser = {
      "user-agent":
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
      accept: "text/html,application/xhtml+xml",
    };
    const page = await get(`/sub/${token()}`, browser);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
    const csp = page.headers.get("content-security-policy") ?? "";
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /script-src 'nonce-[A-Za-z0-9+/=]+'/);
    assert.doesNotMatch(page.body, /(src|href)="https?:/);
    assert.ok(page.body.includes(`/sub/${token()}`));
    const app = await get(`/sub/${token()}`, { "user-agent": "v2rayNG/1.9.45", accept: "text/html" });
    assert.equal(app.headers.get("content-type"), "application/json; charset=utf-8");
  });

  test("the page speaks English, Russian, Persian (right to left) and Chinese by Accept-Language", async () => {
    const expected: [string, string, string][] = [
      ["en-US,en;q=0.9", 'lang="en" dir="ltr"', "Your subscription"],
      ["ru-RU,ru;q=0.9,en;q=0.5", 'lang="ru" dir="ltr"', "Ваша подписка"],
      ["fa-IR,fa;q=0.9", 'lang="fa" dir="rtl"', "اشتراک شما"],
      ["zh-CN,zh;q=0.9", 'lang="zh" dir="ltr"', "您的订阅"],
      ["de-DE,fr;q=0.8", 'lang="en" dir="ltr"', "Your subscription"],
    ];
    for (const [language, attributes, heading] of expected) {
      const page = await get(`/sub/${token()}`, {
        "user-agent":
          "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Safari/604.1",
        accept: "text/html",
        "accept-language": language,
      });
      assert.ok(page.body.includes(attributes), language);
      assert.ok(page.body.includes(heading), language);
    }
  });
});

describe("invalidation, per format", () => {
  const FORMATS = ["base64", "links", "mihomo", "sing-box", "xray-json"];
  const bodies = async () => Promise.all(FORMATS.map(async (f) => (await get(`/sub/${token()}/${f}`)).body));

  test("a revoked grant, a template change and a settings change reach every format at once", async () => {
    const before = await bodies();
    const [first] = inboundIds;
    assert.equal(
      (await request(t, "DELETE", `/api/servers/${serverId}/inbounds/${first}/users/${user.id}`)).statusCode,
      204,
    );
    const revoked = await bodies();
    for (const [i, format] of FORMATS.entries()) assert.notEqual(revoked[i], before[i], `revoke: ${format}`);
    await grant(t, serverId, first as string, { user_id: user.id });
    const granted = await bodies();
    for (const [i, format] of FORMATS.entries()) assert.notEqual(granted[i], revoked[i], `grant: ${format}`);
    // An inbound's tag is in its remark: its link parameters change, so every format changes.
    const moved = await request(t, "PUT", `/api/servers/${serverId}/inbounds/${first}`, {
      tag: "renamed-in",
    });
    assert.equal(moved.statusCode, 200, moved.body);
    const changed = await bodies();
    for (const [i, format] of FORMATS.entries())
      assert.notEqual(changed[i], granted[i], `inbound change: ${format}`);
    // The base documents: mihomo and sing-box change, nothing else does.
    const settings = await request(t, "PUT", "/api/subscription-settings", {
      mihomo_base:
        "mode: rule\nproxy-groups:\n  - name: Only\n    type: select\n    proxies: ['{{all}}']\nrules:\n  - MATCH,Only\n",
      singbox_base: {
        outbounds: [{ type: "selector", tag: "Only", outbounds: ["{{all}}"] }],
        route: { final: "Only" },
      },
    });
    assert.equal(settings.statusCode, 200, settings.body);
    const rebased = await bodies();
    assert.deepEqual(
      FORMATS.map((_, i) => rebased[i] !== changed[i]),
      [false, false, true, true, false],
    );
    assert.ok(validateMihomo(parseYaml(rebased[2] as string)));
    assert.ok(validateSingbox(JSON.parse(rebased[3] as string)));
    const mihomo = await get(`/sub/${token()}/mihomo`);
    assert.equal(mihomo.viaFastify, false);
  });

  test("a template change reaches every format of its users at once", async () => {
    const kind = kindTemplate({ protocol: "vless", network: "ws", tls: false });
    const template = (await request(t, "POST", "/api/templates", kind)).json() as { id: string };
    const inbound = await createInbound(t, serverId, { template_id: template.id, port: await freePort() });
    inboundIds.push(inbound.id);
    await grant(t, serverId, inbound.id, { user_id: user.id });
    const before = await bodies();
    const config = structuredClone(kind.config) as { streamSettings: { wsSettings: { path: string } } };
    config.streamSettings.wsSettings.path = "/moved-by-the-template";
    const changed = await request(t, "PUT", `/api/templates/${template.id}`, { config });
    assert.equal(changed.statusCode, 200, changed.body);
    const after = await bodies();
    for (const [i, format] of FORMATS.entries()) {
      assert.notEqual(after[i], before[i], `template change: ${format}`);
    }
    assert.ok((after[1] as string).includes("moved-by-the-template"));
    assert.ok((after[4] as string).includes('"path": "/moved-by-the-template"'));
  });

  test("settings: headers; the by-id URL switched off leaves only the token", async () => {
    const put = await request(t, "PUT", "/api/subscription-settings", {
      allow_by_id: false,
      support_url: "https://t.me/support",
      announce: "Обслуживание в 02:00",
      update_interval_hours: 6,
      public_url: "https://sub.example.com/",
    });
    assert.equal(put.statusCode, 200, put.body);
    expectProblem(await t.app.inject({ method: "GET", url: `/sub/${user.id}` }), 404, "not_found");
    assert.equal((await get(`/sub/${user.id}`)).status, 404);
    const answer = await get(`/sub/${token()}`);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("support-url"), "https://t.me/support");
    assert.equal(
      answer.headers.get("announce"),
      `base64:${Buffer.from("Обслуживание в 02:00").toString("base64")}`,
    );
    assert.equal(answer.headers.get("profile-update-interval"), "6");
    assert.equal(answer.headers.get("profile-web-page-url"), `https://sub.example.com/sub/${token()}`);
    const shown = (await request(t, "GET", `/api/users/${user.id}`)).json() as { subscription_url: string };
    assert.equal(shown.subscription_url, `https://sub.example.com/sub/${token()}`);
    const reset = await request(t, "PUT", "/api/subscription-settings", {
      allow_by_id: true,
      support_url: null,
      announce: null,
      update_interval_hours: 12,
      public_url: null,
    });
    assert.equal(reset.statusCode, 200);
    assert.equal((await get(`/sub/${user.id}`)).status, 200);
  });

  test("revoke-subscription: the old token is 404 at once, the new one serves new credentials", async () => {
    const oldToken = token();
    const oldLinks = (await get(`/sub/${oldToken}/links`)).body;
    const res = await request(t, "POST", `/api/users/${user.id}/revoke-subscription`);
    assert.equal(res.statusCode, 200, res.body);
    const revoked = res.json() as { user: typeof user; grants: unknown[] };
    assert.equal(revoked.grants.length, inboundIds.length);
    user = revoked.user;
    assert.notEqual(token(), oldToken);
    const old = await get(`/sub/${oldToken}/links`);
    assert.equal(old.status, 404);
    const fresh = await get(`/sub/${token()}/links`);
    assert.equal(fresh.status, 200);
    const oldSet = new Set(oldLinks.split("\n"));
    for (const link of fresh.body.split("\n"))
      assert.ok(!oldSet.has(link), `a link was not rotated: ${link.slice(0, 40)}`);
    for (const format of FORMATS) assert.equal((await get(`/sub/${oldToken}/${format}`)).status, 404, format);
    expectProblem(
      await request(t, "POST", "/api/users/00000000-0000-4000-8000-000000000000/revoke-subscription"),
      404,
      "not_found",
    );
  });

  test("revoke-subscription closes /sub/{user_id} for that user too, from memory and from the database; other users' ids still answer", async () => {
    const other = (await request(t, "POST", "/api/users", { name: "Not revoked" })).json() as { id: string };
    assert.equal((await get(`/sub/${other.id}`)).status, 200);
    const target = (await request(t, "POST", "/api/users", { name: "Revoked by id" })).json() as typeof user;
    assert.equal((await get(`/sub/${target.id}`)).status, 200, "the id answers before (allow_by_id is on)");
    assert.equal((await get(`/sub/${target.id}`)).status, 200, "and from memory");
    const res = await request(t, "POST", `/api/users/${target.id}/revoke-subscription`);
    assert.equal(res.statusCode, 200, res.body);
    const fresh = (res.json() as { user: typeof user }).user.subscription_url.split("/").at(-1) as string;
    // Fast path and route, every format, the page: 404 (the token answers, and so is in memory).
    assert.equal((await get(`/sub/${fresh}`)).status, 200);
    for (let round = 0; round < 2; round++) {
      assert.equal((await get(`/sub/${target.id}`)).status, 404, `round ${round}`);
      for (const format of FORMATS)
        assert.equal((await get(`/sub/${target.id}/${format}`)).status, 404, format);
      expectProblem(await t.app.inject({ method: "GET", url: `/sub/${target.id}` }), 404, "not_found");
      const page = await get(`/sub/${target.id}`, {
        accept: "text/html",
        "user-agent": "Mozilla/5.0 Chrome/130",
      });
      assert.equal(page.status, 404);
    }
    // From the database: a record read again (no record in memory) still refuses the id.
    await request(t, "PUT", `/api/users/${target.id}`, { comment: "drops the record" });
    assert.equal((await get(`/sub/${target.id}`)).status, 404);
    assert.equal((await get(`/sub/${fresh}`)).status, 200);
    assert.equal((await get(`/sub/${other.id}`)).status, 200, "another user's id still answers");
  });

  test("revoke-subscription of an unknown user is 404", async () => {
    expectProblem(
      await request(t, "POST", "/api/users/00000000-0000-4000-8000-000000000000/revoke-subscription"),
      404,
      "not_found",
    );
  });
});

describe("PUT /api/subscription-settings validation", () => {
  test("422 subscription_settings_invalid with the JSON path of each problem; nothing is stored", async () => {
    const cases: [object, string][] = [
      [{ ua_rules: [{ pattern: "([a-z", format: "mihomo" }] }, "body.ua_rules.0.pattern"],
      [{ mihomo_base: "proxies: [\n" }, "body.mihomo_base"],
      [
        { mihomo_base: "proxy-groups:\n  - name: G\n    type: select\n    proxies: [Nowhere]\nrules: []\n" },
        "body.mihomo_base.proxy-groups.0.proxies.0",
      ],
      [{ mihomo_base: "mode: rule\n" }, "body.mihomo_base.rules"],
      [
        { singbox_base: { outbounds: [{ type: "block", tag: "block" }] } },
        "body.singbox_base.outbounds.0.type",
      ],
      [
        { singbox_base: { dns: { servers: [{ tag: "x", address: "tls://1.1.1.1" }] } } },
        "body.singbox_base.dns.servers.0",
      ],
      [
        { singbox_base: { outbounds: [{ type: "selector", tag: "P", outbounds: ["Missing"] }] } },
        "body.singbox_base.outbounds.0.outbounds.0",
      ],
      [{ support_url: "javascript:alert(1)" }, "body.support_url"],
    ];
    const before = (await request(t, "GET", "/api/subscription-settings")).body;
    for (const [body, path] of cases) {
      const res = await request(t, "PUT", "/api/subscription-settings", body);
      expectProblem(res, 422, "subscription_settings_invalid");
      const errors = (res.json() as { errors: { path: string }[] }).errors;
      assert.ok(
        errors.some((e) => e.path === path),
        `${path} in ${JSON.stringify(errors)}`,
      );
    }
    assert.equal((await request(t, "GET", "/api/subscription-settings")).body, before);
  });

  test("the defaults are served when nothing was saved, and validate themselves", async () => {
    const current = (await request(t, "GET", "/api/subscription-settings")).json() as Record<string, unknown>;
    const res = await request(t, "PUT", "/api/subscription-settings", {
      ua_rules: current.ua_rules,
      singbox_base: current.singbox_base,
    });
    assert.equal(res.statusCode, 200, res.body);
  });
});
