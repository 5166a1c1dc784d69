// Check-then-act under concurrency: many requests for one unique name (or port, or grant) at once.
// The services check first, but two requests can both pass the check; the unique indexes then
// decide, and the loser must be a 409 problem on both dialects (db/unique-violation.ts), never a 500.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestApp, type TestApp } from "../support/app.ts";
import { createInbound, registerServer, templateFor } from "../support/provisioning.ts";

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
});

const CONCURRENT = 30;

async function race(
  method: "POST" | "PUT",
  url: (i: number) => string,
  payload: (i: number) => object,
): Promise<{ statuses: number[]; codes: string[] }> {
  const answers = await Promise.all(
    Array.from({ length: CONCURRENT }, (_, i) =>
      t.app.inject({ method, url: url(i), headers: t.auth, payload: payload(i) }),
    ),
  );
  return {
    statuses: answers.map((a) => a.statusCode),
    codes: answers.filter((a) => a.statusCode === 409).map((a) => a.json().code as string),
  };
}

function assertOneWinner(result: { statuses: number[]; codes: string[] }, winner: number, code: string) {
  const { statuses, codes } = result;
  assert.equal(statuses.filter((s) => s === winner).length, 1, statuses.join(","));
  assert.equal(statuses.filter((s) => s === 409).length, CONCURRENT - 1, statuses.join(","));
  assert.ok(
    codes.every((c) => c === code),
    codes.join(","),
  );
}

describe("concurrent requests for one unique value: one wins, the rest are 409", () => {
  test("certificates with one name", async () => {
    const result = await race(
      "POST",
      () => "/api/certificates",
      () => ({ name: "raced-cert", cert_type: "self_signed", domain: "race.example" }),
    );
    assertOneWinner(result, 201, "certificate_name_taken");
    const list = (await t.app.inject({ url: "/api/certificates", headers: t.auth })).json();
    assert.equal(list.filter((c: { name: string }) => c.name === "raced-cert").length, 1);
  });

  test("servers with one name", async () => {
    const result = await race(
      "POST",
      () => "/api/servers",
      () => ({ name: "raced-server", hostname: "race.example" }),
    );
    assertOneWinner(result, 201, "server_name_taken");
  });

  test("renaming many servers to one name", async () => {
    const ids: string[] = [];
    for (let i = 0; i < CONCURRENT; i++) {
      ids.push((await registerServer(t, 10_000 + i, { name: `rename-${i}` })).id);
    }
    const result = await race(
      "PUT",
      (i) => `/api/servers/${ids[i]}`,
      () => ({ name: "renamed-to-one" }),
    );
    assertOneWinner(result, 200, "server_name_taken");
  });

  test("templates with one name", async () => {
    const template = {
      config: { listen: "127.0.0.1", port: "{{port}}", protocol: "vless", settings: { decryption: "none" } },
    };
    const result = await race(
      "POST",
      () => "/api/templates",
      () => ({ name: "raced-template", ...template }),
    );
    assertOneWinner(result, 201, "template_name_taken");
  });

  test("inbounds on one port of one server", async () => {
    const server = await registerServer(t, 10_999);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const result = await race(
      "POST",
      () => `/api/servers/${server.id}/inbounds`,
      (i) => ({ template_id: template.id, port: 40_000, tag: `raced-${i}` }),
    );
    assertOneWinner(result, 201, "port_taken");
  });

  test("one user granted on one inbound many times at once", async () => {
    const server = await registerServer(t, 11_999);
    const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
    const inbound = await createInbound(t, server.id, { template_id: template.id, port: 40_001 });
    const user = (
      await t.app.inject({ method: "POST", url: "/api/users", headers: t.auth, payload: { name: "raced" } })
    ).json();
    const result = await race(
      "POST",
      () => `/api/servers/${server.id}/inbounds/${inbound.id}/users`,
      () => ({ user_id: user.id }),
    );
    assertOneWinner(result, 201, "access_exists");
  });
});
