// The fair-use job's use case (docs/FAIR-USE.md): every tick it asks every node agent for the source
// addresses it saw per user, merges them into this instance's window of sightings, runs the pure
// decision (decision.ts) for every user seen or standing warned/blocked, and applies what it decides:
// a warning event; a block (users.fair_use_blocked_until: the user is not admitted, so the reconciler
// removes their credentials on every core and the agents cut their connections), its history row,
// an audit entry and an event; a release when the block ends, the same way back. The settings row
// holds the default limit, the window, the /24 tolerance, the allow-list and the block periods.
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { UnprocessableError } from "../../lib/errors.ts";
import type { Changes } from "../../lib/events.ts";
import type { AuditService } from "../audit/audit.service.ts";
import type { Emit } from "../notifications/notifier.ts";
import {
  type AllowList,
  addressKey,
  decideFairUse,
  type FairUseOptions,
  FRESH_STATE,
  isAddressOrCidr,
  parseAllowList,
  type Sighting,
} from "./decision.ts";
import type { BlockRecord, FairUseRepository } from "./fairuse.repository.ts";

export type FairUseSettings = {
  /** The ip_limit of users whose own is null; 0: unlimited (the default: nothing is enforced until set). */
  default_ip_limit: number;
  window_seconds: number;
  ipv4_per_24: boolean;
  allow_list: string[];
  block_seconds: number[];
  forget_hours: number;
  warn_grace_seconds: number;
};

export const DEFAULT_FAIR_USE: FairUseSettings = {
  default_ip_limit: 0,
  window_seconds: 600,
  ipv4_per_24: false,
  allow_list: [],
  block_seconds: [600, 3600, 86_400],
  forget_hours: 168,
  warn_grace_seconds: 60,
};

/** Every node server's online report (the nodes service). */
export type FleetOnline = {
  fleetOnline(): Promise<{
    sightings: { user_id: string; ip: string; last_seen: string; server_id: string }[];
    unreachable: string[];
  }>;
};

export type TickResult = { warned: string[]; blocked: string[]; released: string[]; unreachable: string[] };

export type UserFairUse = {
  user_id: string;
  ip_limit: number | null;
  effective_ip_limit: number;
  blocked_until: string | null;
  addresses: { ip: string; key: string | null; server_id: string; last_seen: string }[];
  blocks: Omit<BlockRecord, "user_id">[];
};

type Seen = { lastSeenMs: number; serverId: string };
/** At most this many addresses are kept per user (the newest). */
const MAX_PER_USER = 256;

export class FairUseService {
  /** user id → address → when and where it was last seen, within the window. */
  readonly #seen = new Map<string, Map<string, Seen>>();
  #running: Promise<unknown> = Promise.resolve();
  #options: { settings: FairUseSettings; options: FairUseOptions } | null = null;

  constructor(
    private readonly repo: FairUseRepository,
    private readonly fleet: FleetOnline,
    private readonly audit: AuditService,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
    private readonly emit: Emit = async () => {},
    private readonly changes?: Changes,
  ) {}

  async settings(): Promise<FairUseSettings> {
    const stored = (await this.repo.readSettings()) ?? {};
    return { ...DEFAULT_FAIR_USE, ...stored } as FairUseSettings;
  }

  async updateSettings(patch: Partial<FairUseSettings>): Promise<FairUseSettings> {
    const next = { ...(await this.settings()), ...patch };
    const bad = next.allow_list
      .map((entry, i) => ({ entry, i }))
      .filter(({ entry }) => !isAddressOrCidr(entry));
    if (bad.length > 0) {
      throw new UnprocessableError(
        "fair-use settings refused",
        bad.map(({ i }) => ({ path: `/allow_list/${i}`, message: "not an IP address or CIDR" })),
        "fair_use_settings_invalid",
      );
    }
    await this.repo.writeSettings(next, this.now().toISOString());
    this.#options = null;
    return next;
  }

  /** One tick; ticks of this instance run one after another. */
  tick(): Promise<TickResult> {
    const run = this.#running.then(() => this.#tick());
    this.#running = run.catch(() => undefined);
    return run;
  }

  async #tick(): Promise<TickResult> {
    this.#options = null; // the settings are read again every tick (another instance may have changed them)
    const { settings, options } = await this.#currentOptions();
    const online = await this.fleet.fleetOnline();
    const nowMs = this.now().getTime();
    this.#merge(online.sightings, nowMs - options.windowMs);
    const result: TickResult = { warned: [], blocked: [], released: [], unreachable: online.unreachable };
    const users = await this.repo.usersToJudge([...this.#seen.keys()]);
    const moved: string[] = [];
    for (const user of users) {
      const limit = user.ip_limit ?? settings.default_ip_limit;
      const before = user.state ?? { ...FRESH_STATE, blockedUntilMs: user.blocked_until_ms };
      const seen = this.#seen.get(user.id);
      const sightings: Sighting[] = [];
      if (seen !== undefined) for (const [ip, at] of seen) sightings.push({ ip, lastSeenMs: at.lastSeenMs });
      const decided = decideFairUse(before, limit, sightings, nowMs, options);
      if (decided.state === before) continue;
      const nowIso = new Date(nowMs).toISOString();
      let block: Parameters<FairUseRepository["save"]>[2]["block"];
      let release: Parameters<FairUseRepository["save"]>[2]["release"];
      for (const action of decided.actions) {
        if (action.type === "warn") {
          result.warned.push(user.id);
          await this.emit("user.ip_limit_warning", {
            user_id: user.id,
            name: user.name,
            addresses: action.count,
            ip_limit: action.limit,
            window_seconds: settings.window_seconds,
          });
        } else if (action.type === "block") {
          result.blocked.push(user.id);
          block = {
            id: randomUUID(),
            user_id: user.id,
            started_at: nowIso,
            until: new Date(action.untilMs).toISOString(),
            strike: action.strike,
            address_count: action.count,
            ip_limit: action.limit,
            addresses: action.addresses,
          };
        } else {
          result.released.push(user.id);
          release = { at: nowIso, reason: action.reason };
        }
      }
      // another instance may have blocked or released the user in the meantime: then nothing is written
      const saved = await this.repo.save(user.id, decided.state, {
        ...(block ? { block } : {}),
        ...(release ? { release } : {}),
      });
      if (!saved) continue;
      if (block !== undefined) {
        moved.push(user.id);
        const reason = `${block.address_count} addresses within ${settings.window_seconds} s, limit ${block.ip_limit}`;
        await this.#audit("users.fair_use_block", user.id, {
          reason,
          until: block.until,
          strike: String(block.strike),
        });
        await this.emit("user.ip_blocked", {
          user_id: user.id,
          name: user.name,
          addresses: block.address_count,
          ip_limit: block.ip_limit,
          until: block.until,
          strike: block.strike,
        });
      }
      if (release !== undefined) {
        moved.push(user.id);
        const reason = release.reason === "ended" ? "the block ended" : "the ip limit was lifted";
        await this.#audit("users.fair_use_release", user.id, { reason });
        await this.emit("user.ip_released", { user_id: user.id, name: user.name, reason: release.reason });
      }
    }
    // the reconciler removes (or adds back) their credentials on every core
    if (moved.length > 0) await this.changes?.emit("userStatusChanged", moved);
    if (result.warned.length + result.blocked.length + result.released.length > 0) {
      this.logger.info(
        {
          job: "fair-use",
          warned: result.warned.length,
          blocked: result.blocked.length,
          released: result.released.length,
        },
        "fair use applied",
      );
    }
    return result;
  }

  /** A user's limit, block, the addresses in this instance's window (where and when) and block history. */
  async userFairUse(userId: string): Promise<UserFairUse | undefined> {
    const row = await this.repo.userLimit(userId);
    if (row === undefined) return undefined;
    const { settings, options } = await this.#currentOptions();
    const from = this.now().getTime() - options.windowMs;
    const addresses: UserFairUse["addresses"] = [];
    for (const [ip, at] of this.#seen.get(userId) ?? []) {
      if (at.lastSeenMs <= from) continue;
      addresses.push({
        ip,
        key: addressKey(ip, options.tolerance24, options.allow),
        server_id: at.serverId,
        last_seen: new Date(at.lastSeenMs).toISOString(),
      });
    }
    addresses.sort((a, b) => b.last_seen.localeCompare(a.last_seen));
    const blocks = (await this.repo.blocksOf(userId)).map(({ user_id: _, ...block }) => block);
    return {
      user_id: userId,
      ip_limit: row.ip_limit,
      effective_ip_limit: row.ip_limit ?? settings.default_ip_limit,
      blocked_until: row.blocked_until,
      addresses,
      blocks,
    };
  }

  #merge(sightings: Awaited<ReturnType<FleetOnline["fleetOnline"]>>["sightings"], fromMs: number): void {
    for (const sighting of sightings) {
      const at = Date.parse(sighting.last_seen);
      if (!Number.isFinite(at) || at <= fromMs) continue;
      let own = this.#seen.get(sighting.user_id);
      if (own === undefined) {
        own = new Map();
        this.#seen.set(sighting.user_id, own);
      }
      const known = own.get(sighting.ip);
      if (known === undefined || known.lastSeenMs < at)
        own.set(sighting.ip, { lastSeenMs: at, serverId: sighting.server_id });
    }
    for (const [userId, own] of this.#seen) {
      for (const [ip, at] of own) if (at.lastSeenMs <= fromMs) own.delete(ip);
      if (own.size > MAX_PER_USER) {
        const newest = [...own].sort((a, b) => b[1].lastSeenMs - a[1].lastSeenMs).slice(0, MAX_PER_USER);
        own.clear();
        for (const [ip, at] of newest) own.set(ip, at);
      }
      if (own.size === 0) this.#seen.delete(userId);
    }
  }

  async #currentOptions(): Promise<{ settings: FairUseSettings; options: FairUseOptions }> {
    if (this.#options !== null) return this.#options;
    const settings = await this.settings();
    let allow: AllowList;
    try {
      allow = parseAllowList(settings.allow_list);
    } catch {
      allow = parseAllowList(settings.allow_list.filter(isAddressOrCidr));
    }
    const options: FairUseOptions = {
      windowMs: settings.window_seconds * 1000,
      tolerance24: settings.ipv4_per_24,
      allow,
      blockPeriodsMs: settings.block_seconds.map((seconds) => seconds * 1000),
      forgetMs: settings.forget_hours * 3_600_000,
      warnGraceMs: settings.warn_grace_seconds * 1000,
    };
    this.#options = { settings, options };
    return this.#options;
  }

  async #audit(action: string, userId: string, details: Record<string, string>): Promise<void> {
    await this.audit.record(
      {
        actor: { kind: "system", id: null, name: "fair-use", tokenId: null },
        action,
        method: null,
        route: null,
        targets: { user_id: userId, ...details },
        ip: null,
        requestId: null,
      },
      200,
    );
  }
}
