// Template bodies and request helpers shared by the templates API tests.
import assert from "node:assert/strict";
import type { TestApp } from "./app.ts";

export type ProblemDetail = { path: string; message: string };
type Method = "GET" | "POST" | "PUT" | "DELETE";

export function request(t: TestApp, method: Method, url: string, payload?: unknown) {
  return t.app.inject({
    method,
    url,
    headers: t.auth,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

let counter = 0;
const uniqueName = (prefix: string) => `${prefix}-${++counter}-${Math.random().toString(36).slice(2, 6)}`;

/** VMess over WebSocket with TLS, one variable: builds on both flavors. */
export function wsTemplate(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: uniqueName("vmess-ws"),
    description: "VMess over WebSocket",
    config: {
      port: "{{port}}",
      tag: "{{tag}}",
      protocol: "vmess",
      settings: { clients: [] },
      streamSettings: {
        network: "ws",
        security: "tls",
        wsSettings: { path: "{{ws_path}}" },
        tlsSettings: {},
      },
    },
    variables: [{ name: "ws_path", description: "WebSocket path", default: "/ws", required: false }],
    ...overrides,
  };
}

/** VLESS + REALITY + Vision with a list variable for serverNames: builds on xray only. */
export function realityTemplate(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: uniqueName("reality"),
    client_flow: "xtls-rprx-vision",
    config: {
      protocol: "vless",
      settings: { decryption: "none" },
      streamSettings: {
        network: "tcp",
        security: "reality",
        realitySettings: {
          dest: "www.microsoft.com:443",
          serverNames: "{{server_names}}",
          privateKey: "{{reality_private_key}}",
          shortIds: ["{{ reality_short_id }}"],
        },
      },
    },
    variables: [{ name: "server_names", default: ["www.microsoft.com"] }],
    ...overrides,
  };
}

export async function createTemplate(t: TestApp, body: Record<string, unknown>) {
  const res = await request(t, "POST", "/api/templates", body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** Asserts a problem+json answer and returns its `errors` (empty when absent). */
export function expectProblem(
  res: { statusCode: number; json(): unknown },
  status: number,
  code: string,
): ProblemDetail[] {
  const problem = res.json() as { code: string; errors?: ProblemDetail[] };
  assert.equal(res.statusCode, status, JSON.stringify(problem));
  assert.equal(problem.code, code);
  return problem.errors ?? [];
}
