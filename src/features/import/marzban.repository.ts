// Reads a Marzban (or PasarGuard, which kept Marzban's tables) database into a PeerSnapshot (issue 51).
// Tables read: users, proxies (or PasarGuard's users.proxy_settings), exclude_inbounds_association,
// user_usage_logs, hosts, admins, jwt. The inbounds are in Marzban's xray_config.json, not in the
// database: the caller passes it. docs/MIGRATION.md lists what each column becomes.
import {
  DATA_LIMIT_RESETS,
  type DataLimitReset,
  USER_STATUSES,
  type UserStatus,
} from "../../domain/users.ts";
import {
  addSkip,
  countOf,
  isoOf,
  type PeerCredential,
  type PeerHost,
  type PeerInbound,
  type PeerSnapshot,
  type PeerUser,
} from "./peer.ts";
import type { SourceDb, SourceRow } from "./source.repository.ts";

const PROTOCOLS = ["vless", "vmess", "trojan", "shadowsocks"];

/** The inbounds of Marzban's xray_config.json that carry users (those of the four protocols, with a tag). */
export function inboundsOfXrayConfig(config: unknown): PeerInbound[] {
  const inbounds = (config as { inbounds?: unknown } | null)?.inbounds;
  if (!Array.isArray(inbounds)) return [];
  return inbounds.flatMap((inbound): PeerInbound[] => {
    if (inbound === null || typeof inbound !== "object") return [];
    const { tag, protocol, port } = inbound as { tag?: unknown; protocol?: unknown; port?: unknown };
    if (typeof tag !== "string" || typeof protocol !== "string" || !PROTOCOLS.includes(protocol)) return [];
    return [{ tag, protocol, port: Number(port) || 0, config: inbound as Record<string, unknown> }];
  });
}

const text = (value: unknown): string | null =>
  value === null || value === undefined || String(value) === "" ? null : String(value);
const bool = (value: unknown): boolean => value === true || value === 1 || value === "1" || value === "t";

export async function readMarzban(source: SourceDb, xrayConfig: unknown): Promise<PeerSnapshot> {
  const skipped: Record<string, number> = {};
  const inbounds = inboundsOfXrayConfig(xrayConfig);
  const userColumns = await source.columns("users");
  if (userColumns.size === 0) throw new Error("no users table: not a Marzban or PasarGuard database");
  const byProtocol = new Map<string, string[]>();
  for (const inbound of inbounds)
    byProtocol.set(inbound.protocol, [...(byProtocol.get(inbound.protocol) ?? []), inbound.tag]);

  const secretRows =
    (await source.columns("jwt")).size > 0
      ? await source.all("SELECT secret_key FROM jwt ORDER BY id LIMIT 1")
      : [];
  const secret = text(secretRows[0]?.secret_key);

  // user id → protocol → settings, and the tags each proxy leaves out.
  const proxies = new Map<
    number,
    { type: string; settings: Record<string, unknown>; excluded: Set<string> }[]
  >();
  if (userColumns.has("proxy_settings")) {
    // PasarGuard: one JSON object per user, keyed by protocol.
    for (const row of await source.all("SELECT id, proxy_settings FROM users")) {
      const settings = parseJson(row.proxy_settings);
      if (settings === null) continue;
      proxies.set(
        Number(row.id),
        Object.entries(settings)
          .filter(([, value]) => value !== null && typeof value === "object")
          .map(([type, value]) => ({
            type,
            settings: value as Record<string, unknown>,
            excluded: new Set<string>(),
          })),
      );
    }
  } else if ((await source.columns("proxies")).size > 0) {
    const excluded = new Map<number, Set<string>>();
    if ((await source.columns("exclude_inbounds_association")).size > 0) {
      for (const row of await source.all("SELECT proxy_id, inbound_tag FROM exclude_inbounds_association")) {
        const id = Number(row.proxy_id);
        excluded.set(id, (excluded.get(id) ?? new Set()).add(String(row.inbound_tag)));
      }
    }
    for (const row of await source.all("SELECT id, user_id, type, settings FROM proxies ORDER BY id")) {
      const settings = parseJson(row.settings);
      if (settings === null) {
        addSkip(skipped, "proxies: settings are not JSON");
        continue;
      }
      const userId = Number(row.user_id);
      const list = proxies.get(userId) ?? [];
      list.push({
        type: String(row.type).toLowerCase(),
        settings,
        excluded: excluded.get(Number(row.id)) ?? new Set(),
      });
      proxies.set(userId, list);
    }
  }

  const resets = new Map<number, { total: number; last: string | null }>();
  if ((await source.columns("user_usage_logs")).size > 0) {
    for (const row of await source.all(
      "SELECT user_id, SUM(used_traffic_at_reset) AS total, MAX(reset_at) AS last FROM user_usage_logs GROUP BY user_id",
    )) {
      resets.set(Number(row.user_id), { total: countOf(row.total), last: isoOf(row.last) });
    }
  }

  const users: PeerUser[] = [];
  for (const row of await source.all("SELECT * FROM users ORDER BY id")) {
    const user = toUser(row, proxies, resets, byProtocol, skipped);
    if (user !== undefined) users.push(user);
  }

  const hosts: PeerHost[] =
    (await source.columns("hosts")).size > 0
      ? (await source.all("SELECT * FROM hosts ORDER BY id")).map((row) => ({
          tag: String(row.inbound_tag),
          remark: text(row.remark),
          address: text(row.address),
          port: row.port === null || row.port === undefined ? null : Number(row.port),
          sni: text(row.sni),
          host: text(row.host),
          path: text(row.path),
          security: String(row.security ?? "inbound_default"),
          alpn: text(row.alpn),
          fingerprint: text(row.fingerprint),
          allow_insecure: bool(row.allowinsecure),
          is_disabled: bool(row.is_disabled),
        }))
      : [];

  const admins =
    (await source.columns("admins")).size > 0
      ? (await source.all("SELECT username, is_sudo, created_at FROM admins ORDER BY id")).map((row) => ({
          username: String(row.username),
          is_sudo: bool(row.is_sudo),
          created_at: isoOf(row.created_at) ?? new Date().toISOString(),
        }))
      : [];

  return { source: "marzban", secret, users, inbounds, hosts, admins, skipped };
}

function toUser(
  row: SourceRow,
  proxies: Map<number, { type: string; settings: Record<string, unknown>; excluded: Set<string> }[]>,
  resets: Map<number, { total: number; last: string | null }>,
  byProtocol: Map<string, string[]>,
  skipped: Record<string, number>,
): PeerUser | undefined {
  const name = text(row.username);
  if (name === null) {
    addSkip(skipped, "users: no username");
    return undefined;
  }
  const status = String(row.status ?? "").toLowerCase();
  if (!(USER_STATUSES as readonly string[]).includes(status)) {
    addSkip(skipped, `users: unknown status "${status.slice(0, 20)}"`);
    return undefined;
  }
  const strategy = String(row.data_limit_reset_strategy ?? "no_reset").toLowerCase();
  const reset = (DATA_LIMIT_RESETS as readonly string[]).includes(strategy)
    ? (strategy as DataLimitReset)
    : "no_reset";
  if (reset !== strategy)
    addSkip(skipped, `users: reset strategy "${strategy.slice(0, 20)}" became no_reset`);
  const id = Number(row.id);
  const used = countOf(row.used_traffic);
  const logs = resets.get(id);
  const limit = countOf(row.data_limit);
  const credentials: PeerCredential[] = [];
  for (const proxy of proxies.get(id) ?? []) {
    const secretValue =
      proxy.type === "vless" || proxy.type === "vmess" ? proxy.settings.id : proxy.settings.password;
    if (typeof secretValue !== "string" || secretValue === "") {
      addSkip(skipped, `proxies: a ${proxy.type.slice(0, 20)} proxy without its id/password`);
      continue;
    }
    for (const tag of byProtocol.get(proxy.type) ?? []) {
      if (proxy.excluded.has(tag)) continue;
      credentials.push({
        tag,
        credential: secretValue,
        flow: typeof proxy.settings.flow === "string" ? proxy.settings.flow : "",
        method: typeof proxy.settings.method === "string" ? proxy.settings.method : "",
      });
    }
  }
  const telegram = row.telegram_id === undefined || row.telegram_id === null ? null : Number(row.telegram_id);
  return {
    key: name.toLowerCase(),
    name,
    status: status as UserStatus,
    data_limit_bytes: limit > 0 ? limit : null,
    data_limit_reset: reset,
    used_bytes: used,
    lifetime_used_bytes: used + (logs?.total ?? 0),
    last_reset_at: logs?.last ?? null,
    expire_at: isoOf(row.expire),
    on_hold_duration_seconds:
      row.on_hold_expire_duration == null ? null : countOf(row.on_hold_expire_duration) || null,
    on_hold_timeout_at: isoOf(row.on_hold_timeout),
    comment: text(row.note),
    telegram_id: telegram !== null && Number.isSafeInteger(telegram) && telegram > 0 ? telegram : null,
    created_at: isoOf(row.created_at) ?? new Date().toISOString(),
    online_at: isoOf(row.online_at),
    sub_updated_at: isoOf(row.sub_updated_at),
    sub_last_user_agent: text(row.sub_last_user_agent),
    links: [{ key: name.toLowerCase(), revoked_at: isoOf(row.sub_revoked_at) }],
    credentials,
  };
}

function parseJson(value: unknown): Record<string, unknown> | null {
  if (value !== null && typeof value === "object") return value as Record<string, unknown>;
  if (typeof value !== "string") return null;
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
