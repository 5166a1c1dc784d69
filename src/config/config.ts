// The one place that reads process.env: every setting is parsed and checked once at start, and a
// wrong value stops the start with one clear line per problem.
import { isIP } from "node:net";
import { resolve } from "node:path";

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

export type Config = {
  host: string;
  port: number;
  dataDir: string;
  /** undefined → embedded SQLite at `${dataDir}/portcullis.db` */
  databaseUrl: string | undefined;
  logLevel: LogLevel;
  adminUsername: string;
  adminPassword: string | undefined;
  /** 32 bytes; undefined → read or generate `${dataDir}/secret.key` */
  secretKey: Buffer | undefined;
  tokenTtlSeconds: number;
  /**
   * Which peers may say who the client is (X-Forwarded-For): false (default: the socket's address),
   * true (any: only when nothing but the proxy can reach the port), a hop count, or addresses/CIDRs.
   */
  trustProxy: boolean | number | string[];
  /** Bearer token Prometheus sends to GET /metrics; undefined: no /metrics route. */
  metricsToken: string | undefined;
  /** Base URL of the Telegram Bot API (a local Bot API server, or a test double). */
  telegramApiUrl: string;
  /** Audit log entries older than this are deleted (daily). */
  auditRetentionDays: number;
  /** How often usage-history buckets past their retention (7 days hourly, 13 months daily) are deleted. */
  usagePruneIntervalMs: number;
  coreTimeoutMs: number;
  /**
   * Deadline of a traffic read with reset: its answer is never dropped at coreTimeoutMs (the core has
   * reset its counters by then); a collection waits coreTimeoutMs and journals a later answer next time.
   */
  trafficReadTimeoutMs: number;
  /** How long a graceful shutdown waits for in-flight requests before closing their connections. */
  shutdownTimeoutMs: number;
  /**
   * How long a client may take to send a whole request (its head within the same time or 60 s,
   * whichever is less); then 408 and the connection is closed.
   */
  requestTimeoutMs: number;
  backups: BackupsConfig;
  convergence: ConvergenceConfig;
  lifecycle: LifecycleConfig;
  subscriptions: SubscriptionsConfig;
  certificates: CertificatesConfig;
  dashboard: DashboardConfig;
};

/** The web dashboard's built files (web/, docs/DASHBOARD.md). */
export type DashboardConfig = {
  /** URL path it is served at, e.g. "/dashboard"; undefined: not served. */
  path: string | undefined;
  /** Directory of the built files; undefined: web/dist of the installed package. */
  dir: string | undefined;
};

/** The background loops that keep cores equal to the database (docs/CONVERGENCE.md). */
export type ConvergenceConfig = {
  /** How often each server's core is polled (restart detection) and reconciled when needed. */
  reconcileIntervalMs: number;
  /** Servers reconciled at once. */
  reconcileConcurrency: number;
  /** PostgreSQL with several instances: how long a server's lease lasts without renewal. */
  leaseTtlMs: number;
  /** How often traffic counters are read (with reset) and added to the totals. */
  trafficIntervalMs: number;
};

/** The user lifecycle job (docs/LIFECYCLE.md). */
export type LifecycleConfig = {
  /** How often limits, expiries, on-hold timeouts and period resets are applied (also after every traffic collection). */
  intervalMs: number;
  /** user.usage_threshold at these percentages of the data limit, each once per period. */
  usagePercents: number[];
  /** user.expiring this many days before expire_at (0: never). */
  expiringDays: number;
};

/** Scheduled backups by `serve` (docs/DEPLOY.md, Backups); off while `dir` is undefined. */
export type BackupsConfig = {
  dir: string | undefined;
  intervalMinutes: number;
  /** How many scheduled backups to keep; older ones in `dir` are deleted. */
  keep: number;
  /** SQLite: put the secret key into the backup file (it opens the sealed secrets). */
  isKeyIncluded: boolean;
};

/** GET /sub's in-memory index of users (docs/SUBSCRIPTIONS.md). */
export type SubscriptionsConfig = {
  /** Byte budget of the subscription index; 0 keeps nothing in memory. */
  cacheBytes: number;
  /** How often each instance reads the change feed (what other instances and processes wrote). */
  syncIntervalMs: number;
  /** A cached response older than this is a miss: the request renders it again (fresh traffic totals). */
  maxAgeMs: number;
};

export type CertificatesConfig = {
  selfSignedValidityDays: number;
  acme: {
    directoryUrl: string;
    /** External Account Binding (Google Public CA, ZeroSSL); both halves or neither. */
    eab: { kid: string; hmacKey: string } | undefined;
    contactEmail: string | undefined;
    /** For non-wildcard names; wildcards always use dns-01. */
    challenge: "http-01" | "dns-01";
    http01Host: string;
    http01Port: number;
    /** Executable run as `<hook> set|clear <fqdn> <value>` (docs/API.md, certificates). */
    dns01Hook: string | undefined;
    /** PEM file with the CA to trust for the ACME server's TLS (private CAs); default: system roots. */
    caFile: string | undefined;
  };
};

/** Google Public CA's production directory; Let's Encrypt: https://acme-v02.api.letsencrypt.org/directory */
export const DEFAULT_ACME_DIRECTORY_URL = "https://dv.acme-v02.api.pki.goog/directory";

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

type Env = Record<string, string | undefined>;

/** A tiny reader that collects every problem instead of stopping at the first. */
class EnvReader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  string(name: string, fallback: string): string {
    const value = this.env[name];
    return value === undefined || value === "" ? fallback : value;
  }

  optional(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === "" ? undefined : value;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  }
}

function readCertificates(read: EnvReader): CertificatesConfig {
  const directoryUrl = read.string("PORTCULLIS_ACME_DIRECTORY_URL", DEFAULT_ACME_DIRECTORY_URL);
  if (!/^https?:\/\/\S+$/.test(directoryUrl)) {
    read.problems.push("PORTCULLIS_ACME_DIRECTORY_URL must be an https:// URL");
  }
  const kid = read.optional("PORTCULLIS_ACME_EAB_KID");
  const hmacKey = read.optional("PORTCULLIS_ACME_EAB_HMAC_KEY");
  if ((kid === undefined) !== (hmacKey === undefined)) {
    read.problems.push("PORTCULLIS_ACME_EAB_KID and PORTCULLIS_ACME_EAB_HMAC_KEY must be set together");
  }
  if (hmacKey !== undefined && !/^[A-Za-z0-9_-]+={0,2}$/.test(hmacKey)) {
    read.problems.push("PORTCULLIS_ACME_EAB_HMAC_KEY must be base64url, as the CA hands it out");
  }
  const challenge = read.string("PORTCULLIS_ACME_CHALLENGE", "http-01");
  if (challenge !== "http-01" && challenge !== "dns-01") {
    read.problems.push(`PORTCULLIS_ACME_CHALLENGE must be http-01 or dns-01, got "${challenge}"`);
  }
  const dns01Hook = read.optional("PORTCULLIS_ACME_DNS01_HOOK");
  if (challenge === "dns-01" && dns01Hook === undefined) {
    read.problems.push("PORTCULLIS_ACME_CHALLENGE=dns-01 needs PORTCULLIS_ACME_DNS01_HOOK");
  }
  return {
    selfSignedValidityDays: read.integer("PORTCULLIS_SELF_SIGNED_VALIDITY_DAYS", 365, 1, 3650),
    acme: {
      directoryUrl,
      eab: kid !== undefined && hmacKey !== undefined ? { kid, hmacKey } : undefined,
      contactEmail: read.optional("PORTCULLIS_ACME_EMAIL"),
      challenge: challenge === "dns-01" ? "dns-01" : "http-01",
      http01Host: read.string("PORTCULLIS_ACME_HTTP01_HOST", "0.0.0.0"),
      http01Port: read.integer("PORTCULLIS_ACME_HTTP01_PORT", 80, 1, 65535),
      dns01Hook,
      caFile: read.optional("PORTCULLIS_ACME_CA_FILE"),
    },
  };
}

function readConvergence(read: EnvReader): ConvergenceConfig {
  const reconcileIntervalMs = read.integer("PORTCULLIS_RECONCILE_INTERVAL_MS", 3000, 100, 600_000);
  const leaseTtlMs = read.integer("PORTCULLIS_LEASE_TTL_MS", 15_000, 1000, 3_600_000);
  if (leaseTtlMs < 3 * reconcileIntervalMs) {
    read.problems.push(
      "PORTCULLIS_LEASE_TTL_MS must be at least 3 × PORTCULLIS_RECONCILE_INTERVAL_MS (a lease is renewed every interval)",
    );
  }
  return {
    reconcileIntervalMs,
    reconcileConcurrency: read.integer("PORTCULLIS_RECONCILE_CONCURRENCY", 4, 1, 64),
    leaseTtlMs,
    trafficIntervalMs: read.integer("PORTCULLIS_TRAFFIC_INTERVAL_MS", 10_000, 100, 3_600_000),
  };
}

function readLifecycle(read: EnvReader): LifecycleConfig {
  const raw = read.string("PORTCULLIS_NOTIFY_USAGE_PERCENTS", "80,95").trim();
  const parts = raw === "off" ? [] : raw.split(",").map((part) => part.trim());
  const usagePercents = parts.map(Number);
  if (
    parts.some(
      (part, i) => !/^\d{1,3}$/.test(part) || (usagePercents[i] ?? 0) < 1 || (usagePercents[i] ?? 0) > 100,
    )
  ) {
    read.problems.push(
      `PORTCULLIS_NOTIFY_USAGE_PERCENTS must be "off" or comma-separated integers from 1 to 100, got "${raw}"`,
    );
  }
  return {
    intervalMs: read.integer("PORTCULLIS_LIFECYCLE_INTERVAL_MS", 10_000, 100, 3_600_000),
    usagePercents: [...new Set(usagePercents)].sort((a, b) => a - b),
    expiringDays: read.integer("PORTCULLIS_NOTIFY_EXPIRING_DAYS", 3, 0, 365),
  };
}

function readSubscriptions(read: EnvReader): SubscriptionsConfig {
  return {
    cacheBytes: read.integer("PORTCULLIS_SUB_CACHE_MB", 512, 0, 2047) * 1024 * 1024,
    syncIntervalMs: read.integer("PORTCULLIS_SUB_CACHE_SYNC_MS", 1000, 100, 60_000),
    maxAgeMs: read.integer("PORTCULLIS_SUB_CACHE_MAX_AGE_MS", 300_000, 1000, 86_400_000),
  };
}

function readBackups(read: EnvReader): BackupsConfig {
  const dir = read.optional("PORTCULLIS_BACKUP_DIR");
  const withKey = read.string("PORTCULLIS_BACKUP_WITH_KEY", "true");
  if (withKey !== "true" && withKey !== "false") {
    read.problems.push(`PORTCULLIS_BACKUP_WITH_KEY must be true or false, got "${withKey}"`);
  }
  return {
    dir: dir === undefined ? undefined : resolve(dir),
    intervalMinutes: read.integer("PORTCULLIS_BACKUP_INTERVAL_MINUTES", 1440, 1, 525_600),
    keep: read.integer("PORTCULLIS_BACKUP_KEEP", 7, 1, 1000),
    isKeyIncluded: withKey !== "false",
  };
}

function readTrustProxy(read: EnvReader): boolean | number | string[] {
  const raw = read.optional("PORTCULLIS_TRUST_PROXY");
  if (raw === undefined || raw === "false") return false;
  if (raw === "true") return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const entries = raw.split(",").map((entry) => entry.trim());
  const bad = entries.filter((entry) => {
    const [address = "", bits, ...rest] = entry.split("/");
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const okBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    return family === 0 || !okBits || rest.length > 0;
  });
  if (bad.length > 0) {
    read.problems.push(
      "PORTCULLIS_TRUST_PROXY must be true, false, a hop count, or comma-separated IP addresses/CIDRs",
    );
    return false;
  }
  return entries;
}

function readUrl(read: EnvReader, name: string, fallback: string): string {
  const value = read.string(name, fallback);
  if (!/^https?:\/\/[^\s/]+/.test(value)) read.problems.push(`${name} must be an http(s) URL`);
  return value;
}

function readMetricsToken(read: EnvReader): string | undefined {
  const token = read.optional("PORTCULLIS_METRICS_TOKEN");
  if (token !== undefined && !/^[\x21-\x7e]{16,256}$/.test(token)) {
    read.problems.push("PORTCULLIS_METRICS_TOKEN must be 16-256 printable characters without spaces");
    return undefined;
  }
  return token;
}

function readDashboard(read: EnvReader): DashboardConfig {
  const raw = read.string("PORTCULLIS_DASHBOARD_PATH", "/dashboard");
  const dir = read.optional("PORTCULLIS_DASHBOARD_DIR");
  if (raw === "off") return { path: undefined, dir };
  const path = raw.replace(/\/+$/, "");
  if (!/^(\/[A-Za-z0-9._~-]+)+$/.test(path) || /^\/(api|sub|health)(\/|$)/.test(path)) {
    read.problems.push(
      `PORTCULLIS_DASHBOARD_PATH must be "off" or a path such as /dashboard outside /api, /sub and /health, got "${raw}"`,
    );
  }
  return { path, dir: dir === undefined ? undefined : resolve(dir) };
}

function parseSecretKey(raw: string | undefined, problems: string[]): Buffer | undefined {
  if (raw === undefined) return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, "hex") : Buffer.from(raw, "base64");
  if (key.length !== 32) {
    problems.push("PORTCULLIS_SECRET_KEY must be 32 bytes, as 64 hex characters or base64");
    return undefined;
  }
  return key;
}

/** The environment a child process (pg_dump, pg_restore, the dns-01 hook) inherits: PATH, PG*, … */
export function inheritedEnvironment(): Record<string, string | undefined> {
  return { ...process.env };
}

export function loadConfig(env: Env = process.env): Config {
  const read = new EnvReader(env);
  const databaseUrl = read.optional("DATABASE_URL");
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    read.problems.push("DATABASE_URL must be a postgres:// or postgresql:// URL (leave it unset for SQLite)");
  }
  const logLevel = read.string("LOG_LEVEL", "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    read.problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);
  }
  const adminUsername = read.string("PORTCULLIS_ADMIN_USERNAME", "admin");
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(adminUsername)) {
    read.problems.push("PORTCULLIS_ADMIN_USERNAME must be 1-64 letters, digits, '.', '_' or '-'");
  }
  const adminPassword = read.optional("PORTCULLIS_ADMIN_PASSWORD");
  if (adminPassword !== undefined && (adminPassword.length < 8 || adminPassword.length > 256)) {
    read.problems.push("PORTCULLIS_ADMIN_PASSWORD must be 8 to 256 characters");
  }
  const config: Config = {
    host: read.string("HOST", "127.0.0.1"),
    port: read.integer("PORT", 8080, 0, 65535),
    dataDir: resolve(read.string("DATA_DIR", "./data")),
    databaseUrl,
    logLevel,
    adminUsername,
    adminPassword,
    secretKey: parseSecretKey(read.optional("PORTCULLIS_SECRET_KEY"), read.problems),
    tokenTtlSeconds: read.integer("PORTCULLIS_TOKEN_TTL_SECONDS", 12 * 3600, 60, 365 * 86400),
    trustProxy: readTrustProxy(read),
    metricsToken: readMetricsToken(read),
    telegramApiUrl: readUrl(read, "PORTCULLIS_TELEGRAM_API_URL", "https://api.telegram.org"),
    auditRetentionDays: read.integer("PORTCULLIS_AUDIT_RETENTION_DAYS", 365, 1, 36_500),
    usagePruneIntervalMs: read.integer("PORTCULLIS_USAGE_PRUNE_INTERVAL_MS", 3_600_000, 1000, 86_400_000),
    coreTimeoutMs: read.integer("PORTCULLIS_CORE_TIMEOUT_MS", 5000, 100, 120_000),
    trafficReadTimeoutMs: read.integer("PORTCULLIS_TRAFFIC_READ_TIMEOUT_MS", 120_000, 1000, 3_600_000),
    shutdownTimeoutMs: read.integer("PORTCULLIS_SHUTDOWN_TIMEOUT_MS", 10_000, 100, 600_000),
    requestTimeoutMs: read.integer("PORTCULLIS_REQUEST_TIMEOUT_MS", 60_000, 1000, 600_000),
    backups: readBackups(read),
    convergence: readConvergence(read),
    lifecycle: readLifecycle(read),
    subscriptions: readSubscriptions(read),
    certificates: readCertificates(read),
    dashboard: readDashboard(read),
  };
  if (config.trafficReadTimeoutMs < config.coreTimeoutMs) {
    read.problems.push("PORTCULLIS_TRAFFIC_READ_TIMEOUT_MS must not be less than PORTCULLIS_CORE_TIMEOUT_MS");
  }
  if (read.problems.length > 0) throw new ConfigError(read.problems);
  return config;
}
