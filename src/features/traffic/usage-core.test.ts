// The usage history against a real V2Ray 4.34 core: a real client, configured from the user's
// subscription link, pulls a page through the core; a collection puts those bytes into the user's
// hourly bucket and the server's.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { createTestApp, type TestApp } from "../../../test/support/app.ts";
import { decodeLink } from "../../../test/support/link-decoder.ts";
import { waitFor } from "../../../test/support/poll.ts";
import { freePort } from "../../../test/support/ports.ts";
import {
  createInbound,
  expectCarries,
  grant,
  registerServer,
  startClient,
  subscriptionLinks,
  templateFor,
} from "../../../test/support/provisioning.ts";
import { requires } from "../../../test/support/requires.ts";
import { request } from "../../../test/support/templates.ts";
import { CleanupStack, startHttpServer, startV2rayServer } from "../../../test/support/v2ray.ts";
import { bucketStart } from "./usage.ts";

const needs = requires("v2ray");

const stack = new CleanupStack();
const BODY = randomBytes(300_000);
let t: TestApp;

needs.before(async () => {
  t = await createTestApp({ PORTCULLIS_CORE_TIMEOUT_MS: "2000" });
});
needs.after(async () => {
  await t.close();
  await stack.run();
});

describe("usage history from a real core", needs, () => {
  test("the bytes a real client pulls through the core show up in the user's and the server's hourly bucket", async () => {
    const core = await startV2rayServer(stack.add);
    const server = await registerServer(t, core.apiPort, { name: "history core" });
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: await freePort() });
    const access = await grant(t, server.id, inbound.id, { name: "charted" });
    assert.equal(access.sync_state, "synced", String(access.sync_error));
    const [link] = await subscriptionLinks(t, access.user_id);
    assert.ok(link !== undefined);
    const socksPort = await startClient(stack.add, "v2ray", decodeLink(link));
    const httpPort = await startHttpServer(stack.add, BODY);

    const firstHour = bucketStart(new Date(), "hour");
    await expectCarries(socksPort, httpPort, BODY, "the granted client");
    const from = firstHour.toISOString();
    const to = new Date(firstHour.getTime() + 2 * 3_600_000).toISOString();
    const series = await waitFor(
      async () => {
        await t.deps.services.traffic.collect(server.id);
        const res = await request(
          t,
          "GET",
          `/api/users/${access.user_id}/usage?from=${from}&to=${to}&granularity=hour`,
        );
        const body = res.json();
        return body.downlink_bytes >= BODY.length && body;
      },
      { timeoutMs: 15_000, what: "the pulled bytes in the hourly bucket" },
    );
    const lastHour = bucketStart(new Date(), "hour").toISOString();
    for (const bucket of series.buckets as { start: string; downlink_bytes: number }[]) {
      if (bucket.downlink_bytes > 0)
        assert.ok(bucket.start <= lastHour, `${bucket.start} is not in the future`);
    }
    const fleet = (
      await request(t, "GET", `/api/usage?from=${from}&to=${to}&granularity=hour&server_id=${server.id}`)
    ).json();
    assert.equal(
      fleet.servers[0].downlink_bytes,
      series.downlink_bytes,
      "the server's bucket holds the same bytes",
    );
    const totals = (await request(t, "GET", `/api/users/${access.user_id}/usage`)).json();
    assert.equal(totals.downlink_bytes, series.downlink_bytes, "the history and the totals agree");
  });
});
