// Reads a 3x-ui database (x-ui.db, MHSanaei/3x-ui database/model/model.go) into a PeerSnapshot
// (issue 51). 3x-ui keeps its clients inside each inbound's `settings` JSON and their usage in
// client_traffics (by email). A 3x-ui subscriber is a subId: the clients sharing one become one
// Portcullis user (their limits and expiry are the first client's); a client without a subId is a
// user of its own. docs/MIGRATION.md lists what each field becomes.
import type { UserStatus } from "../../domain/users.ts";
import {
  addSkip,
  countOf,
  isoOf,
  type PeerCredential,
  type PeerInbound,
  type PeerSnapshot,
  type PeerUser,
} from "./peer.ts";
import type { SourceDb } from "./source.repository.ts";

const PROTOCOLS = ["vless", "vmess", "trojan", "shadowsocks"];

type Client = {
  id?: unknown;
  password?: unknown;
  email?: unknown;
  flow?: unknown;
  method?: unknown;
  subId?: unknown;
  totalGB?: unknown;
  expiryTime?: unknown;
  enable?: unknown;
  tgId?: unknown;
  comment?: unknown;
  limitIp?: unknown;
  reset?: unknown;
  created_at?: unknown;
};

function parse(text: unknown): Record<string, unknown> | null {
  if (typeof text !== "string" || text === "") return null;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export async function readXui(source: SourceDb): Promise<PeerSnapshot> {
  const skipped: Record<string, number> = {};
  if ((await source.columns("inbounds")).size === 0 || (await source.columns("client_traffics")).size === 0) {
    throw new Error("no inbounds or client_traffics table: not a 3x-ui database");
  }
  const traffic = new Map<string, { up: number; down: number; all: number; lastOnline: string | null }>();
  const trafficColumns = await source.columns("client_traffics");
  for (const row of await source.all("SELECT * FROM client_traffics")) {
    const up = countOf(row.up);
    const down = countOf(row.down);
    traffic.set(String(row.email), {
      up,
      down,
      all: trafficColumns.has("all_time") ? countOf(row.all_time) : up + down,
      lastOnline: trafficColumns.has("last_online") ? isoOf(row.last_online) : null,
    });
  }
  const inbounds: PeerInbound[] = [];
  const users = new Map<string, PeerUser>();
  const now = Date.now();
  for (const row of await source.all("SELECT * FROM inbounds ORDER BY id")) {
    const protocol = String(row.protocol);
    const settings = parse(row.settings);
    if (!PROTOCOLS.includes(protocol) || settings === null) {
      addSkip(skipped, `inbounds: ${protocol.slice(0, 20)} inbounds are not imported`);
      continue;
    }
    const tag = String(row.tag ?? `inbound-${row.port}`);
    const stream = parse(row.stream_settings);
    const sniffing = parse(row.sniffing);
    const config: Record<string, unknown> = {
      listen: row.listen === null || row.listen === "" ? "0.0.0.0" : row.listen,
      port: Number(row.port),
      protocol,
      tag,
      settings,
      ...(stream === null ? {} : { streamSettings: stream }),
      ...(sniffing === null ? {} : { sniffing }),
    };
    inbounds.push({ tag, protocol, port: Number(row.port), config });
    const inboundEnabled = row.enable === 1 || row.enable === true || row.enable === "1";
    const clients = Array.isArray(settings.clients) ? (settings.clients as Client[]) : [];
    for (const client of clients) {
      const email = typeof client.email === "string" ? client.email : "";
      const secret = protocol === "vless" || protocol === "vmess" ? client.id : client.password;
      if (email === "" || typeof secret !== "string" || secret === "") {
        addSkip(skipped, "clients: without an email or a credential");
        continue;
      }
      const credential: PeerCredential = {
        tag,
        credential: secret,
        flow: typeof client.flow === "string" ? client.flow : "",
        method: typeof client.method === "string" ? client.method : "",
      };
      const subId = typeof client.subId === "string" && client.subId !== "" ? client.subId : null;
      const key = subId === null ? `email:${email}` : `sub:${subId}`;
      const known = users.get(key);
      const usage = traffic.get(email);
      if (known !== undefined) {
        known.credentials.push(credential);
        known.used_bytes += (usage?.up ?? 0) + (usage?.down ?? 0);
        known.lifetime_used_bytes += usage?.all ?? 0;
        addSkip(skipped, "clients: merged into the user of their subId");
        continue;
      }
      const total = countOf(client.totalGB);
      const expiry = Number(client.expiryTime ?? 0);
      const used = (usage?.up ?? 0) + (usage?.down ?? 0);
      const enabled = client.enable !== false && inboundEnabled;
      const status: UserStatus = !enabled
        ? "disabled"
        : expiry > 0 && expiry <= now
          ? "expired"
          : total > 0 && used >= total
            ? "limited"
            : expiry < 0
              ? "on_hold"
              : "active";
      if (countOf(client.limitIp) > 0)
        addSkip(skipped, "clients: IP limit (limitIp) has no Portcullis setting");
      if (countOf(client.reset) > 0)
        addSkip(skipped, "clients: renewal every N days (reset) has no Portcullis period");
      const tg = Number(client.tgId);
      users.set(key, {
        key,
        name: email,
        status,
        data_limit_bytes: total > 0 ? total : null,
        data_limit_reset: "no_reset",
        used_bytes: used,
        lifetime_used_bytes: Math.max(usage?.all ?? 0, used),
        last_reset_at: null,
        expire_at: expiry > 0 ? new Date(expiry).toISOString() : null,
        // A negative expiryTime: the period starts at first use (3x-ui's "start after first use").
        on_hold_duration_seconds: expiry < 0 ? Math.round(-expiry / 1000) : null,
        on_hold_timeout_at: null,
        comment: typeof client.comment === "string" && client.comment !== "" ? client.comment : null,
        telegram_id: Number.isSafeInteger(tg) && tg > 0 ? tg : null,
        created_at: isoOf(client.created_at) ?? new Date().toISOString(),
        online_at: usage?.lastOnline ?? null,
        sub_updated_at: null,
        sub_last_user_agent: null,
        links: subId === null ? [] : [{ key: subId, revoked_at: null }],
        credentials: [credential],
      });
    }
  }
  return {
    source: "3x-ui",
    secret: null,
    users: [...users.values()],
    inbounds,
    hosts: [],
    admins: [],
    skipped,
  };
}
