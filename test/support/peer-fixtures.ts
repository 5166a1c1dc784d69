// Peer panels' databases, written from their published schemas (not copied from their code), for the
// import tests and bench (issue 51). Deterministic for a seed: the same N and seed give the same file.
//
// Marzban: the tables of Gozargah/Marzban app/db/models.py as of v0.8.4 (the last release; alembic head
// with users.on_hold_*, hosts.fragment_setting/noise_setting, users.sub_revoked_at): admins, users,
// proxies, inbounds, exclude_inbounds_association, hosts, jwt, user_usage_logs, system. PasarGuard
// (PasarGuard/panel) upgraded these tables in place and keeps the jwt table and token; the columns the
// importer reads are the same. Enum columns hold the member name (SQLAlchemy's default), datetimes
// are naive UTC "YYYY-MM-DD HH:MM:SS.ffffff", `users.expire` is unix seconds. The inbounds themselves
// live in Marzban's xray_config.json (not in the database): written next to the database file.
//
// 3x-ui: MHSanaei/3x-ui database/model/model.go (v2.x): users, inbounds (clients inside `settings`
// JSON: id/password, email, subId, totalGB, expiryTime in ms, limitIp, enable, tgId, comment, flow),
// client_traffics (usage per email), settings (key/value).
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { loadSqlite } from "../../src/db/connection.ts";

/** A small seeded generator (LCG), so a fixture is the same every time. */
export function seeded(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 4_294_967_296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return {
    int,
    chance: (p: number) => next() < p,
    pick: <T>(items: readonly T[]): T => items[int(items.length)] as T,
    hex: (n: number) => Array.from({ length: n }, () => int(16).toString(16)).join(""),
    uuid() {
      const h = Array.from({ length: 32 }, () => int(16).toString(16));
      h[12] = "4";
      h[16] = "89ab"[int(4)] as string;
      const s = h.join("");
      return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
    },
    word(n: number) {
      const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
      return Array.from({ length: n }, () => alphabet[int(alphabet.length)]).join("");
    },
  };
}

/** SQLAlchemy's naive UTC DateTime text. */
export function pyDate(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").replace("Z", "000");
}

export const MARZBAN_INBOUNDS = [
  { tag: "VLESS TCP", protocol: "vless" },
  { tag: "VMess TCP", protocol: "vmess" },
  { tag: "Trojan TCP", protocol: "trojan" },
  { tag: "Shadowsocks TCP", protocol: "shadowsocks" },
] as const;

/** Marzban's xray_config.json for the fixture: one inbound per protocol, plain TCP. */
export function marzbanXrayConfig(ports: Record<string, number> = {}): Record<string, unknown> {
  return {
    log: { loglevel: "warning" },
    inbounds: MARZBAN_INBOUNDS.map((inbound, i) => ({
      tag: inbound.tag,
      listen: "0.0.0.0",
      port: ports[inbound.tag] ?? 8443 + i,
      protocol: inbound.protocol,
      settings:
        inbound.protocol === "shadowsocks"
          ? { clients: [], network: "tcp,udp" }
          : inbound.protocol !== "vless"
            ? { clients: [] }
            : { clients: [], decryption: "none" },
      streamSettings: { network: "tcp", security: "none" },
    })),
    outbounds: [{ protocol: "freedom", tag: "DIRECT" }],
  };
}

export type MarzbanFixture = {
  /** The jwt table's secret (subscription tokens are signed with it). */
  secret: string;
  users: number;
  statuses: Record<string, number>;
  proxies: number;
  admins: number;
  hosts: number;
  excluded: number;
};

type Row = Record<string, string | number | null>;
type Tables = Record<string, { ddl: string; rows: Row[] }>;

/** The Marzban tables and rows for n users (SQLite types; mysqlDdl rewrites them for MariaDB). */
export function marzbanTables(
  n: number,
  seed = 51,
  nowMs = Date.UTC(2026, 10, 1),
): { tables: Tables; info: MarzbanFixture } {
  const r = seeded(seed);
  const day = 86_400_000;
  const secret = r.hex(64);
  const admins: Row[] = [
    {
      id: 1,
      username: "sudo",
      hashed_password: `$2b$12$${r.word(53)}`,
      created_at: pyDate(nowMs - 400 * day),
      is_sudo: 1,
      password_reset_at: null,
      telegram_id: 100_200_300,
      discord_webhook: null,
      users_usage: 0,
    },
    {
      id: 2,
      username: "reseller",
      hashed_password: `$2b$12$${r.word(53)}`,
      created_at: pyDate(nowMs - 300 * day),
      is_sudo: 0,
      password_reset_at: null,
      telegram_id: null,
      discord_webhook: null,
      users_usage: 0,
    },
  ];
  const inbounds: Row[] = MARZBAN_INBOUNDS.map((inbound, i) => ({ id: i + 1, tag: inbound.tag }));
  const hosts: Row[] = MARZBAN_INBOUNDS.flatMap((inbound, i) => [
    {
      id: 2 * i + 1,
      remark: `🚀 {USERNAME} ${inbound.tag}`,
      address: "{SERVER_IP}",
      port: null,
      path: null,
      sni: null,
      host: null,
      security: "inbound_default",
      alpn: "none",
      fingerprint: "none",
      inbound_tag: inbound.tag,
      allowinsecure: 0,
      is_disabled: 0,
      mux_enable: 0,
      fragment_setting: null,
      noise_setting: null,
      random_user_agent: 0,
    },
    {
      id: 2 * i + 2,
      remark: `CDN ${inbound.tag}`,
      address: "cdn.example.com",
      port: 443,
      path: null,
      sni: "cdn.example.com",
      host: "cdn.example.com",
      security: "inbound_default",
      alpn: "none",
      fingerprint: "chrome",
      inbound_tag: inbound.tag,
      allowinsecure: 0,
      is_disabled: 1,
      mux_enable: 0,
      fragment_setting: null,
      noise_setting: null,
      random_user_agent: 0,
    },
  ]);
  const users: Row[] = [];
  const proxies: Row[] = [];
  const excluded: Row[] = [];
  const usageLogs: Row[] = [];
  const statuses: Record<string, number> = {};
  const strategies = ["no_reset", "no_reset", "day", "week", "month", "year"];
  const methods = ["chacha20-ietf-poly1305", "aes-256-gcm", "aes-128-gcm"];
  for (let id = 1; id <= n; id++) {
    const status =
      id % 10 === 0
        ? "on_hold"
        : id % 17 === 0
          ? "disabled"
          : id % 23 === 0
            ? "limited"
            : id % 29 === 0
              ? "expired"
              : "active";
    statuses[status] = (statuses[status] ?? 0) + 1;
    const created = nowMs - (1 + r.int(700)) * day - r.int(day);
    const limit = r.chance(0.25) ? null : (1 + r.int(500)) * 1_073_741_824;
    const used =
      status === "limited" && limit !== null
        ? limit + r.int(1_000_000)
        : r.int(limit === null ? 300 * 1_073_741_824 : limit);
    const expire =
      status === "expired"
        ? Math.floor((nowMs - (1 + r.int(30)) * day) / 1000)
        : status === "on_hold" || r.chance(0.3)
          ? null
          : Math.floor((nowMs + (1 + r.int(365)) * day) / 1000);
    users.push({
      id,
      username: `user_${String(id).padStart(6, "0")}`,
      status,
      used_traffic: used,
      data_limit: limit,
      data_limit_reset_strategy: r.pick(strategies),
      expire,
      admin_id: r.chance(0.8) ? 1 : 2,
      sub_revoked_at: id % 50 === 7 ? pyDate(nowMs - r.int(30) * day) : null,
      sub_updated_at: r.chance(0.7) ? pyDate(nowMs - r.int(3 * day)) : null,
      sub_last_user_agent: r.chance(0.7)
        ? r.pick(["v2rayNG/1.8.5", "Streisand/1.5.6", "Hiddify/2.0.5", "clash-verge/v1.3.8"])
        : null,
      created_at: pyDate(created),
      note: r.chance(0.2) ? r.pick(["paid until spring", "family plan", "VIP — call first", "trial"]) : null,
      online_at: status === "on_hold" ? null : r.chance(0.8) ? pyDate(nowMs - r.int(7 * day)) : null,
      on_hold_expire_duration: status === "on_hold" ? (1 + r.int(60)) * 86_400 : null,
      on_hold_timeout: status === "on_hold" && r.chance(0.5) ? pyDate(nowMs + (1 + r.int(30)) * day) : null,
      auto_delete_in_days: null,
      edit_at: null,
      last_status_change: pyDate(created),
    });
    // Every user has vless and vmess; most have trojan and shadowsocks too.
    const kinds = [
      "vless",
      "vmess",
      ...(r.chance(0.8) ? ["trojan"] : []),
      ...(r.chance(0.6) ? ["shadowsocks"] : []),
    ];
    for (const kind of kinds) {
      const settings =
        kind === "vless"
          ? { id: r.uuid(), flow: "" }
          : kind === "vmess"
            ? { id: r.uuid() }
            : kind === "trojan"
              ? { password: r.word(22), flow: "" }
              : { password: r.word(22), method: r.pick(methods) };
      const proxyId = proxies.length + 1;
      proxies.push({ id: proxyId, user_id: id, type: kind, settings: JSON.stringify(settings) });
      if (id % 31 === 0 && kind === "vmess") excluded.push({ proxy_id: proxyId, inbound_tag: "VMess TCP" });
    }
    for (let k = r.int(3); k > 0; k--) {
      usageLogs.push({
        id: usageLogs.length + 1,
        user_id: id,
        used_traffic_at_reset: r.int(50 * 1_073_741_824),
        reset_at: pyDate(created + (k + 1) * 30 * day),
      });
    }
  }
  const tables: Tables = {
    admins: {
      ddl: "id INTEGER PRIMARY KEY, username VARCHAR(34) UNIQUE, hashed_password VARCHAR(128), created_at DATETIME, is_sudo BOOLEAN, password_reset_at DATETIME, telegram_id BIGINT, discord_webhook VARCHAR(1024), users_usage BIGINT NOT NULL DEFAULT 0",
      rows: admins,
    },
    inbounds: { ddl: "id INTEGER PRIMARY KEY, tag VARCHAR(256) NOT NULL UNIQUE", rows: inbounds },
    users: {
      ddl: "id INTEGER PRIMARY KEY, username VARCHAR(34) UNIQUE, status VARCHAR(8) NOT NULL, used_traffic BIGINT, data_limit BIGINT, data_limit_reset_strategy VARCHAR(8) NOT NULL, expire INTEGER, admin_id INTEGER REFERENCES admins(id), sub_revoked_at DATETIME, sub_updated_at DATETIME, sub_last_user_agent VARCHAR(512), created_at DATETIME, note VARCHAR(500), online_at DATETIME, on_hold_expire_duration BIGINT, on_hold_timeout DATETIME, auto_delete_in_days INTEGER, edit_at DATETIME, last_status_change DATETIME",
      rows: users,
    },
    proxies: {
      ddl: "id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), type VARCHAR(11) NOT NULL, settings JSON NOT NULL",
      rows: proxies,
    },
    exclude_inbounds_association: {
      ddl: "proxy_id INTEGER REFERENCES proxies(id), inbound_tag VARCHAR(256) REFERENCES inbounds(tag)",
      rows: excluded,
    },
    hosts: {
      ddl: "id INTEGER PRIMARY KEY, remark VARCHAR(256) NOT NULL, address VARCHAR(256) NOT NULL, port INTEGER, path VARCHAR(256), sni VARCHAR(1000), host VARCHAR(1000), security VARCHAR(15) NOT NULL, alpn VARCHAR(8) NOT NULL, fingerprint VARCHAR(10) NOT NULL, inbound_tag VARCHAR(256) NOT NULL REFERENCES inbounds(tag), allowinsecure BOOLEAN, is_disabled BOOLEAN, mux_enable BOOLEAN NOT NULL DEFAULT 0, fragment_setting VARCHAR(100), noise_setting VARCHAR(2000), random_user_agent BOOLEAN NOT NULL DEFAULT 0",
      rows: hosts,
    },
    jwt: {
      ddl: "id INTEGER PRIMARY KEY, secret_key VARCHAR(64) NOT NULL",
      rows: [{ id: 1, secret_key: secret }],
    },
    user_usage_logs: {
      ddl: "id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), used_traffic_at_reset BIGINT NOT NULL, reset_at DATETIME",
      rows: usageLogs,
    },
    system: {
      ddl: "id INTEGER PRIMARY KEY, uplink BIGINT, downlink BIGINT",
      rows: [{ id: 1, uplink: 0, downlink: 0 }],
    },
  };
  const info = {
    secret,
    users: n,
    statuses,
    proxies: proxies.length,
    admins: admins.length,
    hosts: hosts.length,
    excluded: excluded.length,
  };
  return { tables, info };
}

function writeSqlite(path: string, tables: Tables): void {
  if (existsSync(path)) rmSync(path);
  const Database = loadSqlite();
  const db = new Database(path);
  try {
    db.pragma("journal_mode = DELETE");
    db.transaction(() => {
      for (const [name, table] of Object.entries(tables)) {
        db.exec(`CREATE TABLE ${name} (${table.ddl})`);
        const first = table.rows[0];
        if (first === undefined) continue;
        const columns = Object.keys(first);
        const insert = db.prepare(
          `INSERT INTO ${name} (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`,
        );
        for (const row of table.rows) insert.run(row);
      }
    })();
  } finally {
    db.close();
  }
}

/** Writes a Marzban SQLite database (db.sqlite3) and its xray_config.json next to it. */
export function writeMarzbanSqlite(path: string, n: number, seed = 51): MarzbanFixture {
  const { tables, info } = marzbanTables(n, seed);
  writeSqlite(path, tables);
  writeFileSync(path.replace(/[^/]*$/, "xray_config.json"), JSON.stringify(marzbanXrayConfig(), null, 2));
  return info;
}

const sqlValue = (value: string | number | null) =>
  value === null
    ? "NULL"
    : typeof value === "number"
      ? String(value)
      : `'${value.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;

/** The same Marzban tables as MariaDB SQL (DROP + CREATE + INSERT), for `mariadb <database> < file`. */
export function marzbanMysqlScript(n: number, seed = 51): { sql: string; info: MarzbanFixture } {
  const { tables, info } = marzbanTables(n, seed);
  const out: string[] = ["SET FOREIGN_KEY_CHECKS=0;", "SET NAMES utf8mb4;"];
  for (const name of Object.keys(tables).reverse()) out.push(`DROP TABLE IF EXISTS ${name};`);
  for (const [name, table] of Object.entries(tables)) {
    const ddl = table.ddl
      .replace(/INTEGER PRIMARY KEY/g, "INT PRIMARY KEY AUTO_INCREMENT")
      .replace(/\bJSON\b/g, "LONGTEXT");
    out.push(`CREATE TABLE ${name} (${ddl}) DEFAULT CHARSET=utf8mb4;`);
    const first = table.rows[0];
    if (first === undefined) continue;
    const columns = Object.keys(first);
    for (let i = 0; i < table.rows.length; i += 500) {
      const values = table.rows
        .slice(i, i + 500)
        .map((row) => `(${columns.map((c) => sqlValue(row[c] ?? null)).join(",")})`);
      out.push(`INSERT INTO ${name} (${columns.join(",")}) VALUES ${values.join(",")};`);
    }
  }
  out.push("SET FOREIGN_KEY_CHECKS=1;");
  return { sql: `${out.join("\n")}\n`, info };
}

export type XuiFixture = { clients: number; inbounds: number; disabled: number };

/** Writes a 3x-ui x-ui.db: n clients spread over a VLESS, a VMess, a Trojan and a Shadowsocks inbound. */
export function writeXuiSqlite(
  path: string,
  n: number,
  seed = 52,
  nowMs = Date.UTC(2026, 10, 1),
): XuiFixture {
  const r = seeded(seed);
  const day = 86_400_000;
  const protocols = ["vless", "vmess", "trojan", "shadowsocks"] as const;
  const clients: Record<string, Record<string, unknown>[]> = {
    vless: [],
    vmess: [],
    trojan: [],
    shadowsocks: [],
  };
  const traffics: Row[] = [];
  let disabled = 0;
  for (let i = 1; i <= n; i++) {
    const protocol = protocols[i % 4] as (typeof protocols)[number];
    const email = `client-${String(i).padStart(6, "0")}`;
    const enable = i % 19 !== 0;
    if (!enable) disabled++;
    const totalGB = r.chance(0.3) ? 0 : (1 + r.int(200)) * 1_073_741_824;
    const expiryTime = r.chance(0.3)
      ? 0
      : r.chance(0.1)
        ? -(1 + r.int(30)) * day
        : nowMs + (1 + r.int(365)) * day;
    const client: Record<string, unknown> = {
      ...(protocol === "vless" || protocol === "vmess" ? { id: r.uuid() } : { password: r.word(16) }),
      ...(protocol === "vless" ? { flow: "" } : {}),
      ...(protocol === "shadowsocks" ? { method: "" } : {}),
      email,
      limitIp: r.int(3),
      totalGB,
      expiryTime,
      enable,
      tgId: r.chance(0.3) ? String(100_000_000 + r.int(900_000_000)) : "",
      subId: r.word(16).toLowerCase(),
      comment: r.chance(0.2) ? "paid" : "",
      reset: 0,
      created_at: nowMs - r.int(300) * day,
      updated_at: nowMs - r.int(10) * day,
    };
    clients[protocol]?.push(client);
    const up = r.int(totalGB === 0 ? 10_000_000_000 : Math.floor(totalGB / 2));
    traffics.push({
      id: i,
      inbound_id: protocols.indexOf(protocol) + 1,
      enable: enable ? 1 : 0,
      email,
      up,
      down: up * 3,
      expiry_time: expiryTime,
      total: totalGB,
      reset: 0,
      all_time: up * 4,
      last_online: nowMs - r.int(5) * day,
    });
  }
  const inbounds: Row[] = protocols.map((protocol, i) => ({
    id: i + 1,
    user_id: 1,
    up: 0,
    down: 0,
    total: 0,
    all_time: 0,
    remark: `${protocol}-main`,
    enable: 1,
    expiry_time: 0,
    traffic_reset: "never",
    last_traffic_reset_time: 0,
    listen: "",
    port: 20_000 + i,
    protocol,
    settings: JSON.stringify(
      protocol === "shadowsocks"
        ? { method: "chacha20-ietf-poly1305", password: "", network: "tcp,udp", clients: clients[protocol] }
        : protocol === "vless"
          ? { clients: clients[protocol], decryption: "none", fallbacks: [] }
          : protocol === "trojan"
            ? { clients: clients[protocol], fallbacks: [] }
            : { clients: clients[protocol] },
    ),
    stream_settings: JSON.stringify({
      network: "tcp",
      security: "none",
      tcpSettings: { header: { type: "none" } },
    }),
    tag: `inbound-${20_000 + i}`,
    sniffing: JSON.stringify({ enabled: false, destOverride: [] }),
  }));
  const tables: Tables = {
    users: {
      ddl: "id INTEGER PRIMARY KEY AUTOINCREMENT, username TEXT, password TEXT",
      rows: [{ id: 1, username: "admin", password: `$2a$10$${r.word(53)}` }],
    },
    inbounds: {
      ddl: "id INTEGER PRIMARY KEY AUTOINCREMENT, user_id INTEGER, up INTEGER, down INTEGER, total INTEGER, all_time INTEGER DEFAULT 0, remark TEXT, enable NUMERIC, expiry_time INTEGER, traffic_reset TEXT DEFAULT 'never', last_traffic_reset_time INTEGER DEFAULT 0, listen TEXT, port INTEGER, protocol TEXT, settings TEXT, stream_settings TEXT, tag TEXT UNIQUE, sniffing TEXT",
      rows: inbounds,
    },
    client_traffics: {
      ddl: "id INTEGER PRIMARY KEY AUTOINCREMENT, inbound_id INTEGER, enable NUMERIC, email TEXT UNIQUE, up INTEGER, down INTEGER, all_time INTEGER DEFAULT 0, expiry_time INTEGER, total INTEGER, reset INTEGER DEFAULT 0, last_online INTEGER DEFAULT 0",
      rows: traffics,
    },
    settings: {
      ddl: "id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT, value TEXT",
      rows: [
        { id: 1, key: "subPort", value: "2096" },
        { id: 2, key: "subPath", value: "/sub/" },
        { id: 3, key: "subJsonPath", value: "/json/" },
      ],
    },
  };
  writeSqlite(path, tables);
  return { clients: n, inbounds: inbounds.length, disabled };
}
