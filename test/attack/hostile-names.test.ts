// Hostile names through every format (issue 45, finding 2). A server named with the PoC of the issue
// (`poc\u2028external-controller: …`) put an open controller into every mihomo config, because
// go-yaml ends a comment at U+2028 while the writer stripped only CR/LF. Here a corpus of hostile
// names — every line break YAML 1.1 knows, NUL (SQLite only: PostgreSQL cannot store it), C0/C1
// controls, bidi overrides, quotes, `#`, `: `, `{{`, very long, astral — is written straight into
// the database, as rows stored before names were checked would be, and every format of /sub is read
// by the strictest reader of that format (test/support/strict-readers.ts): no key appears that the
// base document does not have, and every entry's name reads back exactly as stored. Through the API
// the same names are refused with a 400 naming the field, on both dialects.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { SubscriptionSettingsRepository } from "../../src/features/subscription-settings/subscription-settings.repository.ts";
import { DEFAULT_SETTINGS } from "../../src/features/subscription-settings/subscription-settings.service.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { decodeLink, escapingProblems } from "../support/link-decoder.ts";
import { MemoryFleet } from "../support/memory-core.ts";
import { createInbound, grant, type Kind, kindTemplate, registerServer } from "../support/provisioning.ts";
import { headerProblems, readYaml } from "../support/strict-readers.ts";
import { createTemplate, expectProblem, request } from "../support/templates.ts";

const isPostgres = process.env.DATABASE_URL !== undefined;
const POC = 'poc\u2028external-controller: 0.0.0.0:9090\u2028secret: ""\u2028#';

/** Names no client document may be broken by; the API refuses the first group, accepts the second. */
const REFUSED = [
  POC,
  POC.replaceAll("\u2028", "\u2029"),
  POC.replaceAll("\u2028", "\u0085"),
  POC.replaceAll("\u2028", "\r"),
  POC.replaceAll("\u2028", "\n"),
  POC.replaceAll("\u2028", "\r\n"),
  "tab\there",
  "c0 \u0001\u001b[31m red",
  "c1 \u0080\u009f del \u007f",
  "\u202Egnp.exe\u202C",
  "iso \u2066left\u2069 \u2067right\u2069 \u2068first\u2069",
  "embed \u202A\u202B\u202C\u202D",
  ...(isPostgres ? [] : ["nul\u0000after"]),
];
const ACCEPTED = [
  `quotes " ' \` \\ end`,
  "# not a comment",
  "key: value",
  "- item",
  "&anchor *alias !tag |",
  "{{all}} {{ user }} {date}",
  "%25 %E2%80%A8 +&=?/",
  "🚀 Frankfurt 𝒳 Алиса ✈ 東京",
  "x".repeat(128),
];
const CORPUS = [...REFUSED, ...ACCEPTED];

/** The keys of the default mihomo base: nothing else may appear at the top of a document. */
const MIHOMO_KEYS = [
  "mixed-port",
  "allow-lan",
  "mode",
  "log-level",
  "ipv6",
  "dns",
  "proxies",
  "proxy-groups",
  "rules",
];

const VLESS: Kind = { protocol: "vless", network: "tcp", tls: false };
// Trojan without TLS is left out of mihomo: its name goes into the document's top comment.
const TROJAN_PLAIN: Kind = { protocol: "trojan", network: "tcp", tls: false };

const fleet = new MemoryFleet();
let t: TestApp;
let userId: string;
let disabledId: string;
const expected = new Set<string>();
const hostileUser = `user ${POC} \u202Eevil`;

async function setColumn(table: "servers" | "users", id: string, name: string): Promise<void> {
  await t.deps.database.db.updateTable(table).set({ name }).where("id", "=", id).execute();
}

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "500" }, { cores: fleet });
  const templates = {
    vless: ((await createTemplate(t, kindTemplate(VLESS))) as { id: string }).id,
    trojan: ((await createTemplate(t, kindTemplate(TROJAN_PLAIN))) as { id: string }).id,
  };
  const user = (await request(t, "POST", "/api/users", { name: "holder" })).json() as { id: string };
  userId = user.id;
  let port = 31_000;
  for (const name of CORPUS) {
    fleet.add(port);
    const server = await registerServer(t, port++, { name: "placeholder" });
    // Straight into the database, as a row stored before the rule would be.
    await setColumn("servers", server.id, name);
    for (const templateId of [templates.vless, templates.trojan]) {
      const inbound = await createInbound(t, server.id, { template_id: templateId, port: port++ });
      await grant(t, server.id, inbound.id, { user_id: userId });
      expected.add(`${name} ${inbound.tag}`);
    }
  }
  await setColumn("users", userId, hostileUser);
  const disabled = (await request(t, "POST", "/api/users", { name: "off" })).json() as { id: string };
  disabledId = disabled.id;
  await setColumn("users", disabledId, hostileUser);
  assert.equal((await request(t, "PUT", `/api/users/${disabledId}`, { status: "disabled" })).statusCode, 200);
  // Settings texts stored before the rule: the disabled placeholder and a header value.
  await new SubscriptionSettingsRepository(t.deps.database.db).write(
    { ...DEFAULT_SETTINGS, placeholder_disabled: POC, support_url: `https://help.example/${POC}` },
    new Date().toISOString(),
  );
  await t.deps.services.subscriptions.loadSettings();
});
after(async () => {
  await t.close();
});

async function sub(id: string, format: string) {
  const res = await t.app.inject({ method: "GET", url: `/sub/${id}/${format}` });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(headerProblems(res.headers), [], "every header value is printable ASCII");
  return res;
}

function names(values: Iterable<string>): string[] {
  return [...values].sort();
}

describe("hostile names stored in the database reach every format safely", () => {
  test("mihomo: no injected key, every proxy's name and every group member reads back as stored", async () => {
    const doc = readYaml((await sub(userId, "mihomo")).body);
    assert.deepEqual(Object.keys(doc).sort(), [...MIHOMO_KEYS].sort(), "no key the base does not have");
    const proxies = doc.proxies as { name: string }[];
    for (const proxy of proxies) assert.ok(expected.has(proxy.name), JSON.stringify(proxy.name));
    assert.equal(proxies.length, CORPUS.length, "one VLESS proxy per server; trojan without TLS left out");
    const groups = doc["proxy-groups"] as { name: string; proxies: string[] }[];
    const auto = groups.find((group) => group.name === "Auto");
    assert.deepEqual(names(auto?.proxies ?? []), names(proxies.map((p) => p.name)));
  });

  test("mihomo: the left-out comment carries every name as escapes, never a raw break", async () => {
    const text = (await sub(userId, "mihomo")).body;
    const comments = text.split("\n").filter((line) => line.startsWith("#"));
    assert.equal(comments.length, CORPUS.length, "one comment line per left-out trojan inbound");
    assert.ok(text.includes("\\u2028external-controller"), "the PoC is in the comment, escaped");
    assert.doesNotMatch(text, /[\r\u0085\u2028\u2029\u202a-\u202e\u2066-\u2069]/u);
  });

  test("a disabled user's placeholder (stored hostile) is one proxy named exactly as stored", async () => {
    const doc = readYaml((await sub(disabledId, "mihomo")).body);
    assert.deepEqual(Object.keys(doc).sort(), [...MIHOMO_KEYS].sort());
    assert.deepEqual(
      (doc.proxies as { name: string }[]).map((p) => p.name),
      [POC],
    );
    const links = Buffer.from((await sub(disabledId, "base64")).body, "base64").toString("utf8");
    assert.deepEqual(
      links.split("\n").map((link) => decodeLink(link).remark),
      [POC],
    );
  });

  test("sing-box and xray-json: valid JSON whose tags and remarks read back as stored", async () => {
    const singbox = JSON.parse((await sub(userId, "sing-box")).body) as { outbounds: { tag: string }[] };
    const tags = new Set(singbox.outbounds.map((o) => o.tag));
    for (const name of expected) assert.ok(tags.has(name), `sing-box has ${JSON.stringify(name)}`);
    const xray = JSON.parse((await sub(userId, "xray-json")).body) as { remarks: string }[];
    const remarks = new Set(xray.map((config) => config.remarks));
    for (const name of expected) assert.ok(remarks.has(name), `xray-json has ${JSON.stringify(name)}`);
  });

  test("links and base64: one escaped link per entry, each remark reads back as stored", async () => {
    const plain = (await sub(userId, "links")).body;
    const base64 = Buffer.from((await sub(userId, "base64")).body, "base64").toString("utf8");
    assert.equal(plain, base64);
    const lines = plain.split("\n");
    assert.equal(lines.length, expected.size);
    for (const line of lines) assert.deepEqual(escapingProblems(line), [], line);
    assert.deepEqual(names(lines.map((line) => decodeLink(line).remark)), names(expected));
  });

  test("headers: the user's name and a stored support URL never put a raw control into the head", async () => {
    const res = await sub(userId, "base64");
    assert.match(String(res.headers["support-url"]), /^https:\/\/help\.example\/poc%E2%80%A8external/);
    const title = String(res.headers["profile-title"]);
    assert.equal(
      Buffer.from(title.replace(/^base64:/, ""), "base64")
        .toString("utf8")
        .endsWith(hostileUser),
      true,
    );
  });

  test("the page shows the name escaped and isolated, so a bidi override cannot flip what is around it", async () => {
    const res = await t.app.inject({
      method: "GET",
      url: `/sub/${userId}`,
      headers: { accept: "text/html", "user-agent": "Mozilla/5.0 Chrome/130" },
    });
    assert.equal(res.statusCode, 200);
    assert.match(
      res.body,
      /<bdi>user poc\u2028external-controller: 0\.0\.0\.0:9090\u2028secret: (&quot;|&#34;){2}/u,
    );
  });
});

describe("the API refuses names that would break a format, and takes the rest", () => {
  for (const name of REFUSED) {
    test(`refused: ${JSON.stringify(name).slice(0, 40)}`, async () => {
      const errors = expectProblem(
        await request(t, "POST", "/api/users", { name }),
        400,
        "validation_failed",
      );
      assert.ok(
        errors.some((e) => e.path === "body.name" && /control characters|NUL/.test(e.message)),
        JSON.stringify(errors),
      );
      expectProblem(
        await request(t, "POST", "/api/servers", { name, hostname: "127.0.0.1" }),
        400,
        "validation_failed",
      );
      expectProblem(await request(t, "PUT", `/api/users/${userId}`, { name }), 400, "validation_failed");
      const webhook = { name, url: "https://hooks.example.com/x" };
      for (const [url, body] of [
        ["/api/api-keys", { name }],
        ["/api/webhooks", webhook],
      ] as const) {
        const problems = expectProblem(await request(t, "POST", url, body), 400, "validation_failed");
        assert.ok(
          problems.some((e) => e.path === "body.name"),
          `${url}: ${JSON.stringify(problems)}`,
        );
      }
      expectProblem(
        await request(t, "PUT", "/api/subscription-settings", { placeholder_disabled: name }),
        400,
        "validation_failed",
      );
    });
  }

  test("accepted: quotes, `#`, `: `, `{{`, astral and long names are names like any other", async () => {
    for (const name of ACCEPTED) {
      const res = await request(t, "POST", "/api/users", { name });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal((res.json() as { name: string }).name, name);
    }
  });

  test("a comment may hold line feeds and tabs, nothing else that breaks", async () => {
    const res = await request(t, "PUT", `/api/users/${userId}`, { comment: "first line\n\tsecond" });
    assert.equal(res.statusCode, 200, res.body);
    for (const comment of ["cr\r", "ls\u2028", "nel\u0085", "rlo\u202E"]) {
      expectProblem(await request(t, "PUT", `/api/users/${userId}`, { comment }), 400, "validation_failed");
    }
  });
});
