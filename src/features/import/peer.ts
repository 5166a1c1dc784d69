// What an import reads from another panel, in Portcullis's words (issue 51): the readers
// (marzban.repository.ts, xui.repository.ts) fill it, import.service.ts writes it. Nothing here is
// invented: a value the peer does not have is null.
import type { DataLimitReset, UserStatus } from "../../domain/users.ts";

export type PeerSource = "marzban" | "3x-ui";

/** One of the user's secrets, for one of the peer's inbounds (by its tag). */
export type PeerCredential = {
  tag: string;
  /** UUID (VLESS/VMess) or password (Trojan/Shadowsocks), exactly as the peer had it. */
  credential: string;
  /** VLESS flow the peer gave this user ("" none). */
  flow: string;
  /** Shadowsocks method the peer gave this user ("" none: the inbound's). */
  method: string;
};

export type PeerUser = {
  /** Who the user is at the peer, stable across runs: Marzban's username (lower case), 3x-ui's email. */
  key: string;
  name: string;
  status: UserStatus;
  data_limit_bytes: number | null;
  data_limit_reset: DataLimitReset;
  used_bytes: number;
  lifetime_used_bytes: number;
  last_reset_at: string | null;
  expire_at: string | null;
  on_hold_duration_seconds: number | null;
  on_hold_timeout_at: string | null;
  comment: string | null;
  telegram_id: number | null;
  created_at: string;
  online_at: string | null;
  sub_updated_at: string | null;
  sub_last_user_agent: string | null;
  /** Old subscription URL keys: Marzban's username (tokens), 3x-ui's subId. */
  links: { key: string; revoked_at: string | null }[];
  credentials: PeerCredential[];
};

/** An inbound of the peer's Xray config: the object as the peer wrote it (clients included). */
export type PeerInbound = { tag: string; protocol: string; port: number; config: Record<string, unknown> };

export type PeerHost = {
  tag: string;
  remark: string | null;
  address: string | null;
  port: number | null;
  sni: string | null;
  host: string | null;
  path: string | null;
  security: string;
  alpn: string | null;
  fingerprint: string | null;
  allow_insecure: boolean;
  is_disabled: boolean;
};

export type PeerAdmin = { username: string; is_sudo: boolean; created_at: string };

export type PeerSnapshot = {
  source: PeerSource;
  /** Marzban/PasarGuard's jwt.secret_key: old subscription tokens are checked with it. */
  secret: string | null;
  users: PeerUser[];
  inbounds: PeerInbound[];
  hosts: PeerHost[];
  admins: PeerAdmin[];
  /** What the reader could not take, per kind: reason → count. */
  skipped: Record<string, number>;
};

/** A source row's date (naive UTC text, a Date, or unix seconds/ms) as ISO; null when absent or unreadable. */
export function isoOf(value: unknown): string | null {
  if (value === null || value === undefined || value === "") return null;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (typeof value === "number" || typeof value === "bigint") {
    const n = Number(value);
    if (n <= 0) return null;
    return new Date(n < 1e11 ? n * 1000 : n).toISOString();
  }
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return isoOf(Number(text));
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$/.exec(text);
  if (match === null) return null;
  const fraction = (match[3] ?? ".000").slice(0, 4).padEnd(4, "0");
  const date = new Date(`${match[1]}T${match[2]}${fraction}${match[4] ?? "Z"}`);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** A count column (bigint as text, number or null) as a number; 0 when absent. */
export function countOf(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}

export function addSkip(skipped: Record<string, number>, reason: string, n = 1): void {
  skipped[reason] = (skipped[reason] ?? 0) + n;
}
