// The attack suite: every operation of /api/openapi.json, over real HTTP, with what an outsider or
// a careless script sends — no, garbage, revoked and expired tokens; with a valid token, wrong types,
// missing and extra fields, 1 MB strings, NUL, lone surrogates, invalid UTF-8, deep nesting,
// prototype keys, huge and negative numbers, other content types, and bad path and query values.
// The server behind it has a real v2ray core. The rules: nothing is 2xx without a valid token,
// nothing is 5xx, every error is problem+json with a `code`, no response carries a secret, and the
// core is still alive afterwards. (`npm test` then scans every log line for secrets.)
import assert from "node:assert/strict";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { AuthRepository } from "../../src/features/auth/auth.repository.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import {
  BAD_PATH_VALUES,
  BAD_QUERY_VALUES,
  badBodies,
  fillPath,
  type Known,
  type Operation,
  operationsOf,
  sample,
} from "../support/openapi-ops.ts";
import { createInbound, grant, registerServer, templateFor } from "../support/provisioning.ts";
import { type RawAnswer, rawRequest } from "../support/raw-http.ts";
import { requires } from "../support/requires.ts";
import { CleanupStack, startV2rayServer, type V2rayServer } from "../support/v2ray.ts";

const needs = requires("v2ray");

const stack = new CleanupStack();
let t: TestApp;
let port: number;
let core: V2rayServer;
let operations: Operation[];
let pathValues: Record<string, Record<string, string>>;
let known: Known;
const LEAK = `leakcheck-${randomBytes(8).toString("hex")}`;
const tokens = { revoked: "", expired: "" };
const tally = { requests: 0, byClass: new Map<string, number>() };

needs.before(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: "127.0.0.1" });
  port = (t.app.server.address() as AddressInfo).port;
  operations = operationsOf((await t.app.inject({ url: "/api/openapi.json" })).json());
  core = await startV2rayServer(stack.add);
  const server = await registerServer(t, core.apiPort, {
    api_credentials: JSON.stringify({ token: LEAK }),
  });
  const template = await templateFor(t, { protocol: "vless", network: "tcp", tls: false });
  const inboundPort = 20_000 + Math.floor(Math.random() * 10_000);
  const inbound = await createInbound(t, server.id, { template_id: template.id, port: inboundPort });
  const access = await grant(t, server.id, inbound.id, { name: "fuzz-user" });
  const cert = await t.app.inject({
    method: "POST",
    url: "/api/certificates",
    headers: t.auth,
    payload: { name: "fuzz-cert", cert_type: "self_signed", domain: "fuzz.example" },
  });
  const key = await t.app.inject({
    method: "POST",
    url: "/api/api-keys",
    headers: t.auth,
    payload: { name: "fuzz-key" },
  });
  const admin = await t.app.inject({
    method: "POST",
    url: "/api/admins",
    headers: t.auth,
    payload: { username: "fuzz-viewer", password: "fuzz-viewer-password", role: "viewer" },
  });
  const webhook = await t.app.inject({
    method: "POST",
    url: "/api/webhooks",
    headers: t.auth,
    payload: { name: "fuzz-hook", url: "http://127.0.0.1:9/hook", events: ["user.created"] },
  });
  const host = await t.app.inject({
    method: "POST",
    url: `/api/servers/${server.id}/inbounds/${inbound.id}/hosts`,
    headers: t.auth,
    payload: { address: "cdn.example.net" },
  });
  const ids = {
    host: host.json().id as string,
    webhook: webhook.json().id as string,
    admin: admin.json().id as string,
    user: access.user_id,
    server: server.id,
    inbound: inbound.id,
    template: template.id,
    certificate: cert.json().id as string,
    apiKey: key.json().id as string,
    email: access.proxy_user_id,
  };
  pathValues = {
    "/api/api-keys": { id: ids.apiKey },
    "/api/admins": { id: ids.admin },
    "/api/webhooks": { id: ids.webhook },
    "/api/users": { id: ids.user },
    "/api/certificates": { id: ids.certificate },
    "/api/templates": { id: ids.template },
    "/api/servers": { id: ids.server },
    "": {
      server_id: ids.server,
      inbound_id: ids.inbound,
      user_id: ids.user,
      email: ids.email,
      host_id: ids.host,
    },
  };
  known = {
    template_id: ids.template,
    certificate_id: ids.certificate,
    default_certificate_id: ids.certificate,
    user_id: ids.user,
    user_ids: [ids.user],
  };
  tokens.revoked = await revokedToken();
  tokens.expired = await expiredToken();
});

needs.after(async () => {
  const classes = [...tally.byClass].map(([c, n]) => `${c}×${n}`).join(", ");
  console.log(`attack suite: ${tally.requests} requests; ${classes}`);
  await t.close();
  await stack.run();
});

async function revokedToken(): Promise<string> {
  const login = await t.app.inject({
    method: "POST",
    url: "/api/auth/token",
    payload: { username: "admin", password: "correct horse battery" },
  });
  const token = login.json().access_token as string;
  await t.app.inject({
    method: "POST",
    url: "/api/auth/logout",
    headers: { authorization: `Bearer ${token}` },
  });
  return token;
}

async function expiredToken(): Promise<string> {
  const token = `pcs_${randomBytes(32).toString("base64url")}`;
  const principal = await t.deps.services.auth.authenticate(t.auth.authorization);
  await new AuthRepository(t.deps.database.db).insertToken({
    id: randomUUID(),
    adminId: principal.adminId,
    kind: "session",
    name: null,
    role: null,
    tokenHash: createHash("sha256").update(token).digest("hex"),
    createdAt: "2026-01-01T00:00:00.000Z",
    expiresAt: "2026-01-01T01:00:00.000Z",
    lastUsedAt: null,
  });
  return token;
}

/** Fixture ids by path prefix; a path no fixture covers gets a well-formed id of nothing. */
function valuesFor(op: Operation): Record<string, string> {
  const prefix = Object.keys(pathValues).find((p) => p !== "" && op.path.startsWith(`${p}/{id}`));
  const values: Record<string, string> = {
    ...pathValues[""],
    ...(prefix === undefined ? {} : pathValues[prefix]),
  };
  // Every other path parameter (id, key_id, device_id, …) is an id nobody has: an empty one would
  // make a different path (a 405 or another route), not the operation under attack.
  for (const [, name] of op.path.matchAll(/\{([^}]+)\}/g)) values[name ?? ""] ??= randomUUID();
  return values;
}

type Sent = { op: Operation; what: string; answer: RawAnswer };

async function send(
  op: Operation,
  what: string,
  target: string,
  options: { authorization?: string; body?: string | Buffer; contentType?: string } = {},
): Promise<Sent> {
  const headers: Record<string, string> = {};
  if (options.authorization !== undefined) headers.authorization = options.authorization;
  if (options.body !== undefined) headers["content-type"] = options.contentType ?? "application/json";
  const answer = await rawRequest(port, {
    method: op.method,
    target,
    headers,
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  tally.requests++;
  const statusClass = `${String(answer.status)[0]}xx`;
  tally.byClass.set(statusClass, (tally.byClass.get(statusClass) ?? 0) + 1);
  return { op, what, answer };
}

const SECRET_IN_RESPONSE = [/PRIVATE KEY/, /scrypt\$/, /leakcheck/i];
const TOKEN = /pc[sk]_[A-Za-z0-9_-]{43}/;

/** The rules every answer obeys. */
function check({ op, what, answer }: Sent): void {
  const label = `${op.method} ${op.path} [${what}] → ${answer.status}`;
  assert.ok(answer.status < 500, `${label}: ${answer.body.slice(0, 300)}`);
  for (const pattern of SECRET_IN_RESPONSE) assert.doesNotMatch(answer.body, pattern, label);
  const issuesTokens = op.path === "/api/auth/token" || (op.path === "/api/api-keys" && op.method === "POST");
  if (!(issuesTokens && answer.status < 300)) assert.doesNotMatch(answer.body, TOKEN, label);
  if (answer.status >= 400) {
    assert.match(answer.headers["content-type"] ?? "", /^application\/problem\+json/, label);
    if (op.method !== "HEAD") {
      const problem = JSON.parse(answer.body) as { code?: unknown; status?: unknown };
      assert.equal(typeof problem.code, "string", label);
      assert.equal(problem.status, answer.status, label);
    }
  }
}

/** Non-DELETE operations first: the fixtures the deletes remove are needed until then. */
function ordered(ops: Operation[]): Operation[] {
  return [...ops.filter((op) => op.method !== "DELETE"), ...ops.filter((op) => op.method === "DELETE")];
}

describe("the attack suite over every operation of the OpenAPI document", needs, () => {
  test("without a valid token nothing protected answers 2xx", async () => {
    const protectedOps = operations.filter((op) => !op.isPublic);
    assert.ok(protectedOps.length >= 40);
    const variants: [string, string | undefined][] = [
      ["no header", undefined],
      ["empty", ""],
      ["scheme only", "Bearer"],
      ["garbage", "Bearer not-a-real-token-at-all-000"],
      ["basic", `Basic ${Buffer.from("admin:correct horse battery").toString("base64")}`],
      ["lowercase scheme", t.auth.authorization.replace("Bearer", "bearer")],
      ["huge", `Bearer ${"a".repeat(8000)}`],
      ["revoked", `Bearer ${tokens.revoked}`],
      ["expired", `Bearer ${tokens.expired}`],
      ["two tokens", `Bearer ${tokens.expired}, Bearer ${tokens.revoked}`],
    ];
    for (const op of ordered(protectedOps)) {
      const target = fillPath(op.path, valuesFor(op));
      const body = op.body === undefined ? undefined : JSON.stringify(sample(op.body, known));
      for (const [what, authorization] of variants) {
        const sent = await send(op, what, target, {
          ...(authorization === undefined ? {} : { authorization }),
          ...(body === undefined ? {} : { body }),
        });
        check(sent);
        assert.ok(
          sent.answer.status === 401 || (what === "lowercase scheme" && sent.answer.status < 500),
          `${op.method} ${op.path} with ${what} → ${sent.answer.status}`,
        );
        if (what !== "lowercase scheme") assert.equal(JSON.parse(sent.answer.body).status, 401);
      }
    }
  });

  test("with a valid token, bad input is a 4xx problem: never a 5xx, never a secret", async () => {
    for (const op of ordered(operations)) {
      const values = valuesFor(op);
      const target = fillPath(op.path, values);
      const authorization = t.auth.authorization;
      if (op.body !== undefined) {
        for (const variant of badBodies(op.body, known)) {
          check(
            await send(op, variant.name, target, {
              authorization,
              body: variant.body,
              ...(variant.contentType === undefined ? {} : { contentType: variant.contentType }),
            }),
          );
        }
      }
      const body = op.body === undefined ? undefined : JSON.stringify(sample(op.body, known));
      for (const param of op.parameters.filter((p) => p.in === "query")) {
        for (const value of BAD_QUERY_VALUES) {
          const sent = await send(
            op,
            `${param.name}=${value.slice(0, 20)}`,
            `${target}?${param.name}=${value}`,
            {
              authorization,
              ...(body === undefined ? {} : { body }),
            },
          );
          check(sent);
        }
        const repeated = `${target}?${param.name}=1&${param.name}=2`;
        check(await send(op, `${param.name} twice`, repeated, { authorization }));
      }
      for (const param of op.parameters.filter((p) => p.in === "path")) {
        for (const value of BAD_PATH_VALUES) {
          const bad = op.path
            .replace(`{${param.name}}`, value)
            .replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? "");
          check(
            await send(op, `${param.name}=${value.slice(0, 20)}`, bad, {
              authorization,
              ...(body === undefined ? {} : { body }),
            }),
          );
        }
      }
    }
    assert.ok(core.isAlive(), "the v2ray core survived everything the API accepted");
    assert.ok(tally.requests > 2000, `${tally.requests} requests`);
  });
});
