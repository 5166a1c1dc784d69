// The protocols whose proxy holds users, as the inline-users tests build them for every wire layout:
// an inbound with given clients, and built users with the JSON clients they stand for. Shared by the
// golden tests of inline users (inbound-builder/inline-users.ts) and of the agent's record of them
// (cores/relay-record.ts).
import assert from "node:assert/strict";
import type { CoreProtocol } from "../../src/cores/core-types.ts";
import type { FlavorApi } from "../../src/cores/flavor-api.ts";
import { buildInbound, buildUser } from "../../src/cores/inbound-builder/build.ts";
import type { BuiltInbound, BuiltUser } from "../../src/cores/inbound-builder/built.ts";
import { v2rayApi } from "../../src/cores/v2ray-api.ts";
import { layoutFlavor, type WireLayout } from "../../src/cores/wire-layout.ts";
import { xrayApiFor } from "../../src/cores/xray-api.ts";

export type InlineCase = {
  name: string;
  protocol: CoreProtocol;
  settings: Record<string, unknown>;
  method?: string;
  credential: (i: number) => string;
};

const uuid = (i: number) => `${String(i).padStart(8, "0")}-1111-4111-8111-111111111111`;

export const INLINE_CASES: InlineCase[] = [
  { name: "vless", protocol: "vless", settings: { decryption: "none" }, credential: uuid },
  { name: "vmess", protocol: "vmess", settings: {}, credential: uuid },
  { name: "trojan", protocol: "trojan", settings: {}, credential: (i) => `pw-${i}` },
  {
    name: "shadowsocks aead",
    protocol: "shadowsocks",
    method: "aes-128-gcm",
    settings: { method: "aes-128-gcm", network: "tcp,udp" },
    credential: (i) => `ss-${i}`,
  },
  {
    name: "shadowsocks 2022",
    protocol: "shadowsocks",
    method: "2022-blake3-aes-128-gcm",
    settings: { method: "2022-blake3-aes-128-gcm", password: "AAAAAAAAAAAAAAAAAAAAAA==", network: "tcp" },
    credential: (i) => Buffer.alloc(16, i + 1).toString("base64"),
  },
];

/** V2Ray 4.x has no multi-user shadowsocks; V2Ray shadowsocks keeps its one user inline already. */
export function takesUsers(c: InlineCase, layout: WireLayout): boolean {
  return c.protocol !== "shadowsocks" || layoutFlavor(layout) === "xray";
}

export function apiOf(layout: WireLayout): FlavorApi {
  return layoutFlavor(layout) === "v2ray" ? v2rayApi : xrayApiFor(layout);
}

export function inboundOf(c: InlineCase, layout: WireLayout, clients: object[], tag = "in"): BuiltInbound {
  const json = { tag, port: 20_000, protocol: c.protocol, settings: { ...c.settings, clients } };
  const built = buildInbound(json, layout);
  assert.ok(built.ok, JSON.stringify(built.ok ? "" : built.problems));
  return built.value;
}

/** `count` users `<prefix><i>@t` (levels 0 and 1 in turn), built and as the JSON clients they stand for. */
export function usersOf(
  c: InlineCase,
  layout: WireLayout,
  count: number,
  prefix = "u",
): { users: BuiltUser[]; clients: object[] } {
  const users: BuiltUser[] = [];
  const clients: object[] = [];
  for (let i = 0; i < count; i++) {
    const spec = { email: `${prefix}${i}@t`, level: i % 2, credential: c.credential(i) };
    const user = buildUser(c.protocol, layout, {
      ...spec,
      ...(c.method === undefined ? {} : { shadowsocksMethod: c.method }),
    });
    assert.ok(user.ok, JSON.stringify(user.ok ? "" : user.problems));
    users.push(user.value);
    const uuidLike = c.protocol === "vless" || c.protocol === "vmess";
    clients.push(
      uuidLike
        ? { id: spec.credential, email: spec.email, level: spec.level }
        : { password: spec.credential, email: spec.email, level: spec.level },
    );
  }
  return { users, clients };
}
