// Hosts (issue 48) through the API and /sub, on whichever dialect DATABASE_URL selects: an inbound
// with three hosts (a CDN domain with a TLS override, a direct IP, one disabled) is exactly two
// entries in every format, each with its own address, SNI and Host; with no hosts the subscription
// is what it was; every host write reaches a cached /sub at once (migration 0022's triggers);
// order, per-format exclusion, remark variables; hostile text refused at the edge (400) and hosts
// that do not fit their inbound refused before they are stored (422 host_invalid).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parse as parseYaml } from "yaml";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { validateMihomo, validateSingbox } from "../../../test/support/format-schemas.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { expectProblem, request } from "../../../test/support/templates.ts";

let t: TestApp;
let serverId: string;
let inboundId: string;
let hostsUrl: string;
let user: { id: string; subscription_url: string };

before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "1000" });
  serverId = (await registerServer(t, await freePort(), { name: "Frankfurt", hostname: "vpn.example.com" }))
    .id;
  const template = await templateFor(t, { protocol: "vless", network: "ws", tls: false });
  inboundId = (await createInbound(t, serverId, { template_id: template.id, port: await freePort() })).id;
  hostsUrl = `/api/servers/${serverId}/inbounds/${inboundId}/hosts`;
  user = (
    await request(t, "POST", "/api/users", { name: "alice", data_limit_bytes: 10 * 2 ** 30 })
  ).json() as typeof user;
  await grant(t, serverId, inboundId, { user_id: user.id });
});
after(async () => {
  await t.close();
});

async function sub(format = ""): Promise<string> {
  const res = await t.app.inject({
    method: "GET",
    url: `${user.subscription_url}${format ? `/${format}` : ""}`,
  });
  assert.equal(res.statusCode, 200, res.body);
  return res.body;
}

type Entry = {
  address: string;
  sni: string | undefined;
  host: string | undefined;
  tls: boolean;
  name: string;
};

/** The entries of a format as clients read them: address, SNI, Host header, TLS, name. */
async function entries(format: "links" | "base64" | "mihomo" | "sing-box" | "xray-json"): Promise<Entry[]> {
  const body = await sub(format);
  if (format === "links" || format === "base64") {
    const text = format === "base64" ? Buffer.from(body, "base64").toString("utf8") : body;
    return text
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"))
      .map((line) => {
        const target = decodeLink(line);
        assert.equal(target.protocol, "vless");
        if (target.protocol !== "vless") throw new Error("vless expected");
        const sni = target.security.type === "none" ? undefined : target.security.sni;
        const host = target.transport.type === "ws" ? target.transport.host : undefined;
        return { address: target.host, sni, host, tls: target.security.type === "tls", name: target.remark };
      });
  }
  if (format === "mihomo") {
    const doc = parseYaml(body) as { proxies: Record<string, unknown>[] };
    assert.ok(validateMihomo(doc), JSON.stringify(validateMihomo.errors));
    return doc.proxies.map((p) => ({
      address: p.server as string,
      sni: p.servername as string | undefined,
      host: (p["ws-opts"] as { headers?: { Host?: string } } | undefined)?.headers?.Host,
      tls: p.tls === true,
      name: p.name as string,
    }));
  }
  if (format === "sing-box") {
    const doc = JSON.parse(body) as { outbounds: Record<string, unknown>[] };
    assert.ok(validateSingbox(doc), JSON.stringify(validateSingbox.errors));
    return doc.outbounds
      .filter((o) => o.type === "vless")
      .map((o) => {
        const tls = o.tls as { enabled?: boolean; server_name?: string } | undefined;
        const transport = o.transport as { headers?: { Host?: string } } | undefined;
        return {
          address: o.server as string,
          sni: tls?.server_name,
          host: transport?.headers?.Host,
          tls: tls?.enabled === true,
          name: o.tag as string,
        };
      });
  }
  const configs = JSON.parse(body) as {
    remarks: string;
    outbounds: {
      settings: { vnext: { address: string }[] };
      streamSettings: {
        security: string;
        tlsSettings?: { serverName?: string };
        wsSettings?: { headers?: { Host?: string } };
      };
    }[];
  }[];
  return configs.map((config) => {
    const proxy = config.outbounds[0];
    assert.ok(proxy);
    return {
      address: proxy.settings.vnext[0]?.address as string,
      sni: proxy.streamSettings.tlsSettings?.serverName,
      host: proxy.streamSettings.wsSettings?.headers?.Host,
      tls: proxy.streamSettings.security === "tls",
      name: config.remarks,
    };
  });
}

const FORMATS = ["links", "base64", "mihomo", "sing-box", "xray-json"] as const;

async function addHost(body: Record<string, unknown>): Promise<{ id: string; position: number }> {
  const res = await request(t, "POST", hostsUrl, body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as { id: string; position: number };
}

describe("hosts", () => {
  let withoutHosts: Record<string, string>;
  const ids: string[] = [];

  test("with no hosts the inbound is one entry at the server's hostname (the implicit host)", async () => {
    assert.deepEqual((await request(t, "GET", hostsUrl)).json(), []);
    withoutHosts = {};
    for (const format of FORMATS) {
      withoutHosts[format] = await sub(format);
      const list = await entries(format);
      assert.equal(list.length, 1, format);
      assert.equal(list[0]?.address, "vpn.example.com", format);
    }
  });

  test("three hosts (a CDN with TLS in front, a direct IP, one disabled) are exactly two entries in every format", async () => {
    ids.push(
      (
        await addHost({
          address: "cdn.example.net",
          port: 443,
          remark: "{SERVER} CDN {PROTOCOL}+{TRANSPORT}",
          security: "tls",
          sni: ["edge.example.net"],
          host: ["cdn.example.net"],
          alpn: ["http/1.1"],
          fingerprint: "chrome",
        })
      ).id,
    );
    ids.push((await addHost({ address: "203.0.113.7", remark: "direct", host: ["direct.example.org"] })).id);
    ids.push((await addHost({ address: "198.51.100.1", remark: "off", is_disabled: true })).id);
    const listed = (await request(t, "GET", hostsUrl)).json() as { id: string; position: number }[];
    assert.deepEqual(
      listed.map((host) => [host.id, host.position]),
      ids.map((id, i) => [id, i]),
    );
    for (const format of FORMATS) {
      const list = await entries(format);
      assert.equal(list.length, 2, `${format}: ${JSON.stringify(list)}`);
      const [cdn, direct] = list;
      assert.deepEqual(
        { address: cdn?.address, sni: cdn?.sni, host: cdn?.host, tls: cdn?.tls },
        { address: "cdn.example.net", sni: "edge.example.net", host: "cdn.example.net", tls: true },
        format,
      );
      assert.equal(cdn?.name, "Frankfurt CDN vless+ws", format);
      assert.deepEqual(
        { address: direct?.address, sni: direct?.sni, host: direct?.host, tls: direct?.tls },
        { address: "203.0.113.7", sni: undefined, host: "direct.example.org", tls: false },
        format,
      );
    }
    const link = (await sub("links")).split("\n")[0] as string;
    const cdn = decodeLink(link);
    assert.equal(cdn.port, 443);
    assert.ok(cdn.protocol === "vless" && cdn.security.type === "tls");
    assert.deepEqual(cdn.security.alpn, ["http/1.1"]);
    assert.equal(cdn.security.fingerprint, "chrome");
  });

  test("reordering changes the order of the entries; a stale list is refused", async () => {
    const [cdn, direct, off] = ids as [string, string, string];
    const res = await request(t, "PUT", `${hostsUrl}/order`, { ids: [direct, off, cdn] });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      (res.json() as { id: string }[]).map((host) => host.id),
      [direct, off, cdn],
    );
    assert.deepEqual(
      (await entries("links")).map((entry) => entry.address),
      ["203.0.113.7", "cdn.example.net"],
    );
    expectProblem(await request(t, "PUT", `${hostsUrl}/order`, { ids: [direct, cdn] }), 422, "host_invalid");
    expectProblem(
      await request(t, "PUT", `${hostsUrl}/order`, { ids: [direct, direct, cdn] }),
      400,
      "validation_failed",
    );
    await request(t, "PUT", `${hostsUrl}/order`, { ids });
  });

  test("exclude_from leaves an entry out of those formats only", async () => {
    const res = await request(t, "PUT", `${hostsUrl}/${ids[1]}`, { exclude_from: ["mihomo", "links"] });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await entries("mihomo")).length, 1);
    assert.equal((await entries("base64")).length, 1);
    assert.equal((await entries("sing-box")).length, 2);
    assert.equal((await entries("xray-json")).length, 2);
    await request(t, "PUT", `${hostsUrl}/${ids[1]}`, { exclude_from: [] });
  });

  test("per-user remark variables are filled for each user, in every format", async () => {
    const res = await request(t, "PUT", `${hostsUrl}/${ids[1]}`, {
      remark: "{USERNAME} {DATA_LEFT} {DAYS_LEFT} {STATUS}",
    });
    assert.equal(res.statusCode, 200, res.body);
    for (const format of FORMATS) {
      const names = (await entries(format)).map((entry) => entry.name);
      assert.equal(names[1], "alice 10 GB ∞ active", format);
    }
  });

  test("the admin API lists the user's links as /sub writes them: one per enabled host, per-user remarks filled", async () => {
    const fromSub = (await sub("links")).split("\n").filter((line) => line !== "" && !line.startsWith("#"));
    assert.equal(fromSub.length, 2);
    const access = (await request(t, "GET", `/api/users/${user.id}/access?include_uris=true`)).json() as {
      uri?: string;
      links: { remark: string; uri: string }[];
    }[];
    assert.equal(access.length, 1);
    assert.deepEqual(
      access[0]?.links.map((link) => link.uri),
      fromSub,
    );
    assert.equal(access[0]?.uri, fromSub[0]);
    assert.deepEqual(
      access[0]?.links.map((link) => link.remark),
      fromSub.map((line) => decodeLink(line).remark),
    );
    assert.equal(access[0]?.links[1]?.remark, "alice 10 GB ∞ active");
    const configs = (await request(t, "GET", `/api/users/${user.id}/configs`)).json() as {
      remark: string;
      uri: string;
    }[];
    assert.deepEqual(
      configs.map((config) => config.uri),
      fromSub,
    );
    const byInbound = (
      await request(t, "GET", `/api/servers/${serverId}/inbounds/${inboundId}/configs`)
    ).json() as {
      uri: string;
    }[];
    assert.deepEqual(
      byInbound.map((config) => config.uri),
      fromSub,
    );
    const one = (await request(t, "GET", `/api/users/${user.id}/access/${inboundId}/config`)).json() as {
      uri: string;
    };
    assert.equal(one.uri, fromSub[0]);
  });

  test("mux, fragment and noise reach xray-json and sing-box's TLS fragment; links and mihomo are unchanged", async () => {
    const before = { links: await sub("links"), mihomo: await sub("mihomo") };
    const fragment = { packets: "tlshello", length: "100-200", interval: "10-20" };
    const noise = [{ type: "rand", packet: "10-20", delay: "10-16" }];
    const res = await request(t, "PUT", `${hostsUrl}/${ids[0]}`, {
      mux: { concurrency: 8 },
      fragment,
      noise,
    });
    assert.equal(res.statusCode, 200, res.body);
    const configs = JSON.parse(await sub("xray-json")) as {
      outbounds: {
        tag: string;
        protocol: string;
        mux?: unknown;
        settings: unknown;
        streamSettings?: { sockopt?: { dialerProxy?: string } };
      }[];
    }[];
    const [cdn, direct] = configs;
    assert.ok(cdn && direct);
    assert.deepEqual(cdn.outbounds[0]?.mux, { enabled: true, concurrency: 8 });
    assert.equal(cdn.outbounds[0]?.streamSettings?.sockopt?.dialerProxy, "fragment");
    const dialer = cdn.outbounds.find((o) => o.tag === "fragment");
    assert.deepEqual(dialer?.settings, { fragment, noises: noise });
    assert.equal(dialer?.protocol, "freedom");
    assert.equal(direct.outbounds[0]?.mux, undefined);
    assert.equal(direct.outbounds[0]?.streamSettings?.sockopt, undefined);
    assert.equal(
      direct.outbounds.find((o) => o.tag === "fragment"),
      undefined,
    );

    const doc = JSON.parse(await sub("sing-box")) as {
      outbounds: { type: string; tls?: { fragment?: boolean } }[];
    };
    assert.ok(validateSingbox(doc), JSON.stringify(validateSingbox.errors));
    const vless = doc.outbounds.filter((o) => o.type === "vless");
    assert.deepEqual(
      vless.map((o) => o.tls?.fragment === true),
      [true, false],
    );
    assert.equal(await sub("links"), before.links);
    assert.equal(await sub("mihomo"), before.mihomo);

    const cleared = await request(t, "PUT", `${hostsUrl}/${ids[0]}`, {
      mux: null,
      fragment: null,
      noise: null,
    });
    assert.equal(cleared.statusCode, 200, cleared.body);
    const again = JSON.parse(await sub("xray-json")) as { outbounds: { tag: string; mux?: unknown }[] }[];
    assert.equal(again[0]?.outbounds[0]?.mux, undefined);
    assert.equal(
      again[0]?.outbounds.find((o) => o.tag === "fragment"),
      undefined,
    );
  });

  test("deleting every host gives back exactly the subscription there was", async () => {
    for (const id of ids) {
      const res = await request(t, "DELETE", `${hostsUrl}/${id}`);
      assert.equal(res.statusCode, 204, res.body);
    }
    for (const format of FORMATS) assert.equal(await sub(format), withoutHosts[format], format);
  });

  test("a host that follows the server's health is left out while the server is offline, back when it is online", async () => {
    // The registered server has no core behind it: what the health check finds is set by hand here.
    const setStatus = (status: "online" | "offline") =>
      t.deps.database.db.updateTable("servers").set({ status }).where("id", "=", serverId).execute();
    await setStatus("online");
    const id = (await addHost({ address: "health.example.net", follows_health: true })).id;
    await addHost({ address: "always.example.net" });
    const addresses = async () => (await entries("links")).map((entry) => entry.address);
    assert.deepEqual(await addresses(), ["health.example.net", "always.example.net"]);
    // A write outside the API reaches the cache through the change feed (the sync job reads it;
    // the test app runs no jobs, so the read is asked for here).
    const expect = (want: string[]) =>
      waitFor(
        async () => {
          await t.deps.services.subscriptions.catchUp();
          return JSON.stringify(await addresses()) === JSON.stringify(want);
        },
        { timeoutMs: 10_000, what: `entries ${want.join(", ")}` },
      );
    await setStatus("offline");
    await expect(["always.example.net"]);
    await setStatus("online");
    await expect(["health.example.net", "always.example.net"]);
    for (const host of (await request(t, "GET", hostsUrl)).json() as { id: string }[]) {
      assert.equal((await request(t, "DELETE", `${hostsUrl}/${host.id}`)).statusCode, 204);
    }
    assert.ok(id);
  });

  test("hostile text is refused at the edge (400), never stored", async () => {
    const hostile = [
      { remark: "a\u2028b" },
      { remark: "a\u2029b" },
      { remark: "a\u0085b" },
      { remark: "a\u202eb" },
      { remark: "a\u0000b" },
      { remark: "a\nb" },
      { address: "evil.example.com\r\nx: y" },
      { address: "a b" },
      { sni: ["ok.example.com", "bad name"] },
      { host: ["x\u2066y"] },
      { path: "/a b" },
      { path: "no-slash" },
      { port: 0 },
      { alpn: ["h9"] },
      { fingerprint: "netscape" },
      { security: "reality" },
      { exclude_from: ["page"] },
      { unknown: 1 },
      { noise: [{ type: "str", packet: "\u0007", delay: "1-2" }] },
    ];
    for (const body of hostile) {
      const res = await request(t, "POST", hostsUrl, body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
    }
    assert.deepEqual((await request(t, "GET", hostsUrl)).json(), []);
  });

  test("a host that does not fit its inbound is 422 host_invalid; unknown ids are 404", async () => {
    // The inbound speaks no TLS: SNI, ALPN, fingerprint and allow_insecure need the TLS override.
    expectProblem(await request(t, "POST", hostsUrl, { sni: ["a.example.com"] }), 422, "host_invalid");
    expectProblem(await request(t, "POST", hostsUrl, { allow_insecure: true }), 422, "host_invalid");
    const ok = await request(t, "POST", hostsUrl, {
      security: "tls",
      sni: ["a.example.com"],
      allow_insecure: true,
    });
    assert.equal(ok.statusCode, 201, ok.body);
    const id = (ok.json() as { id: string }).id;
    expectProblem(await request(t, "PUT", `${hostsUrl}/${id}`, { security: "none" }), 422, "host_invalid");
    const missing = "00000000-0000-4000-8000-000000000000";
    expectProblem(await request(t, "GET", `${hostsUrl}/${missing}`), 404, "not_found");
    expectProblem(
      await request(t, "GET", `/api/servers/${serverId}/inbounds/${missing}/hosts`),
      404,
      "not_found",
    );
    expectProblem(
      await request(t, "POST", `/api/servers/${missing}/inbounds/${inboundId}/hosts`, {}),
      404,
      "not_found",
    );
    assert.equal((await request(t, "DELETE", `${hostsUrl}/${id}`)).statusCode, 204);
  });
});
