// /metrics: off without a token, refused without the right one, Prometheus text a real parser reads,
// and the counters a scripted scenario should move do move: HTTP requests by route and status,
// subscription cache hits and misses, a core going up, grants per sync state.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
// @ts-expect-error: the package ships no types; its one function returns the families parsed below.
import parsePrometheus from "parse-prometheus-text-format";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { createInbound, grant, registerServer, templateFor } from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { CleanupStack, startV2rayServer } from "../../../test/support/v2ray.ts";

const needs = requires("v2ray");

type Family = { name: string; type: string; metrics: { value?: string; labels?: Record<string, string> }[] };
const parse = parsePrometheus as (text: string) => Family[];

const TOKEN = "metrics-token-0123456789abcdef";
const stack = new CleanupStack();
let t: TestApp;
before(async () => {
  t = await createTestApp({ PORTCULLIS_METRICS_TOKEN: TOKEN });
});
after(async () => {
  await t.close();
  await stack.run();
});

async function scrape(): Promise<Map<string, Family>> {
  const res = await t.app.inject({ url: "/metrics", headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
  return new Map(parse(res.body).map((family) => [family.name, family]));
}

function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name);
  const sample = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return sample?.value === undefined ? 0 : Number(sample.value);
}

describe("GET /metrics", needs, () => {
  test("without PORTCULLIS_METRICS_TOKEN there is no /metrics; with it, only the token opens it", async () => {
    const off = await createTestApp();
    try {
      assert.equal((await off.app.inject({ url: "/metrics" })).statusCode, 404);
      // Nor Node's own metrics (the event-loop lag monitor is a 10 ms timer), which nobody could read.
      const offText = (await off.deps.services.metrics.render()).body;
      assert.doesNotMatch(offText, /portcullis_nodejs_eventloop_lag_seconds|portcullis_process_/);
      assert.match(offText, /portcullis_http_requests_total/, "the service's own metrics are there");
    } finally {
      await off.close();
    }
    assert.equal((await t.app.inject({ url: "/metrics" })).statusCode, 401);
    const admin = await t.app.inject({ url: "/metrics", headers: t.auth });
    assert.equal(admin.statusCode, 401, "an admin token is not the metrics token");
    assert.equal(admin.json().code, "invalid_metrics_token");
  });

  test("a scripted scenario moves the right counters and gauges", async () => {
    const before = await scrape();
    for (const family of [
      "portcullis_process_resident_memory_bytes",
      "portcullis_nodejs_eventloop_lag_seconds",
    ]) {
      assert.ok(before.has(family), `${family} is exported`);
    }
    const listed = () =>
      value(before, "portcullis_http_requests_total", { route: "/api/users", status: "200" });
    const listedBefore = listed();
    await t.app.inject({ url: "/api/users", headers: t.auth });
    await t.app.inject({ url: "/api/users", headers: t.auth });
    await t.app.inject({ url: "/api/users?page=0", headers: t.auth });

    const core = await startV2rayServer(stack.add);
    const server = await registerServer(t, core.apiPort);
    assert.equal(
      (await t.app.inject({ method: "POST", url: `/api/servers/${server.id}/test`, headers: t.auth })).json()
        .connected,
      true,
    );
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, {
      template_id: template.id,
      port: 20_000 + Math.floor(Math.random() * 10_000),
    });
    const access = await grant(t, server.id, inbound.id, { name: "metered" });
    await t.app.inject({ url: `/sub/${access.user_id}` });
    await t.app.inject({ url: `/sub/${access.user_id}` });

    const after = await scrape();
    assert.equal(
      value(after, "portcullis_http_requests_total", { route: "/api/users", status: "200" }),
      listedBefore + 2,
    );
    assert.equal(value(after, "portcullis_http_requests_total", { route: "/api/users", status: "400" }), 1);
    assert.equal(value(after, "portcullis_core_up", { server: server.id }), 1);
    assert.ok(value(after, "portcullis_grants", { state: "synced" }) >= 1);
    assert.ok(value(after, "portcullis_subscription_cache_misses_total") >= 1);
    assert.ok(value(after, "portcullis_subscription_cache_hits_total") >= 1);
    const histogram = after.get("portcullis_http_request_duration_seconds");
    assert.equal(histogram?.type, "HISTOGRAM");
  });
});

test("every metric the Grafana dashboard in docs/ queries is one /metrics exports", async () => {
  const dashboard = JSON.parse(readFileSync("docs/grafana-dashboard.json", "utf8")) as {
    panels: { targets: { expr: string }[] }[];
  };
  const exported = new Set((await scrape()).keys());
  const queried = dashboard.panels.flatMap((p) =>
    p.targets.flatMap((x) => x.expr.match(/portcullis_[a-z0-9_]+/g) ?? []),
  );
  assert.ok(queried.length >= 14);
  for (const name of queried) {
    const family = name.replace(/_(bucket|sum|count)$/, "");
    assert.ok(exported.has(family) || exported.has(name), `${name} is queried but not exported`);
  }
});
