// The subscription use case. Every user's subscription is kept as compact values in memory (the
// index) and rendered on each request; a user who is not there (new, changed, over the budget) costs
// one read of their grants, and is kept. The index is told what changed by the change feed: catchUp()
// before any API write answers (so an operator's next GET sees it) and every second from the job
// (writes of other instances and processes). Rendering only reads: polling clients never write.

import { setImmediate as yieldToRequests } from "node:timers/promises";
import type { Logger } from "pino";
import { parse as parseYaml } from "yaml";
import { DatabaseUnavailableError, NotFoundError } from "../../lib/errors.ts";
import type { Format } from "../../lib/subscription-formats.ts";
import { headerSafe } from "../../lib/text.ts";
import { isUuid } from "../../lib/uuid.ts";
import type { DeviceGate } from "../devices/devices.service.ts";
import { type DeviceClaim, type DeviceRefusal, hwidHeaders } from "../devices/hwid.ts";
import type { SubscriptionSettings } from "../subscription-settings/subscription-settings.schemas.ts";
import {
  type AnswerSettings,
  answerInto,
  bodyBytes,
  type FormatResponse,
  formatAnswer,
  hasOwnHeaders,
  notModifiedHeaders,
  okHeaders,
} from "./answer.ts";
import { type Change, ChangeFeed } from "./change-feed.ts";
import { FetchLog, markFetch } from "./fetch-log.ts";
import { compileRules, FormatChooser } from "./formats.ts";
import type { InboundRef, Layout } from "./layouts.ts";
import {
  DEFAULT_PLACEHOLDER_TEXTS,
  NIL_UUID,
  PlaceholderRefs,
  type PlaceholderTexts,
  placeholderText,
  splitUsage,
} from "./placeholders.ts";
import { dispositionUnlessPlain } from "./subscription.ts";
import { type IndexStats, NOT_BY_ID, type SubscriptionIndex } from "./subscription-index.ts";
import type {
  SubscriptionRows,
  SubscriptionsRepository,
  SweepCursor,
  WarmCursor,
} from "./subscriptions.repository.ts";
import { checksDevicesAt, KEY, type RecordInput, userOf } from "./user-record.ts";

/** Where the settings come from (the subscription-settings feature). */
export type SettingsSource = { get(): Promise<SubscriptionSettings> };

/** The settings as requests use them: compiled rules, parsed base documents, header values. */
export type RuntimeSettings = {
  chooser: FormatChooser;
  allowById: boolean;
  answer: AnswerSettings;
  /** Plain base64 with the default headers: the fast path's fixed header lists apply. */
  isPlain: boolean;
  page: { title: string | null; note: string | null; publicUrl: string | null };
  /** The names of the entries a user who may not connect gets instead of links. */
  placeholders: PlaceholderTexts;
  /** Device limits at fetch time: the default limit, whether an HWID is required, the refusals' entry names. */
  devices: {
    defaultLimit: number;
    requireHwid: boolean;
    texts: Record<DeviceRefusal, string>;
  };
};

const TOKEN_PATTERN = /^[0-9a-f]{32}$/;

export type SubscriptionsOptions = {
  /** A record whose traffic totals are older than this is read again (its Subscription-Userinfo is at most this old). */
  maxAgeMs: number;
  /**
   * How often the job calls refreshTotals() (PORTCULLIS_SUB_CACHE_SYNC_MS): a pass of the sweep
   * leaves room for two of them within the max age (sweepPassMs()).
   */
  sweepIntervalMs: number;
  now?: () => number;
};

/**
 * How a request fetched the subscription, for sub_updated_at / sub_last_user_agent (undefined: not
 * recorded), and the device its app described (checked for users with a device limit; omitted: none).
 */
export type Fetch = { userAgent: string | undefined; device?: DeviceClaim };

export type SubscriptionStats = IndexStats & { misses: number };

export type SubscriptionResponse = {
  status: 200 | 304;
  /** Names (lowercase) and values in one flat list, as Node's writeHead takes them; new for each response. */
  headers: string[];
  /**
   * The base64 text; undefined for 304. A string, not a Buffer: Node sends a string body in the same
   * write as the headers, a Buffer in a second one (writev), which cost more than the conversion.
   */
  body: string | undefined;
};

/** Changes are kept this long for other instances; an instance that could not read them for half of it starts over. */
export const CHANGES_RETENTION_SECONDS = 600;
const WARM_USERS_PER_BATCH = 1000;
const WARM_RETRIES_PER_BATCH = 3;
/**
 * Users per read of the totals sweep (their used_bytes), requests answered between two: about 1.2 ms
 * a read on SQLite (better-sqlite3 holds the event loop meanwhile) and on PostgreSQL at 100,000 users.
 */
const TOTALS_PER_BATCH = 500;
/** What one call of the sweep may spend (the rest is owed to the next): the job's catch-up waits for it. */
const TOTALS_BUDGET_MS = 100;
/** Room a pass leaves, besides two calls' intervals, for calls that come late (a loaded event loop). */
const SWEEP_SLACK_MS = 1000;

/**
 * How long a pass of the totals sweep takes: three quarters of the max age, or less when the max age
 * is short, so that a record is read again before it ages out. A record read at time r is fresh until
 * at least r + the max age (its loaded-at second is the read's, and fresh means at most the max age in
 * whole seconds), and a user's two reads are at most a pass plus two call intervals apart (a call
 * reads whom the time since the last one owes, so a read comes up to an interval late, and a pass
 * ends within a call, the next one starting with the call after). So a pass takes at most the max age
 * minus two intervals and SWEEP_SLACK_MS, and at least a quarter of the max age (shorter settings
 * than that cannot be kept under load). At the defaults (300 s, 1 s): 225 s; 6 s and 1 s: 3 s.
 */
export function sweepPassMs(maxAgeMs: number, intervalMs: number): number {
  return Math.max(maxAgeMs / 4, Math.min((maxAgeMs * 3) / 4, maxAgeMs - 2 * intervalMs - SWEEP_SLACK_MS));
}

export class SubscriptionsService {
  readonly #feed: ChangeFeed;
  readonly #now: () => number;
  readonly #maxAgeS: number;
  /** False after a failed read of the feed: nothing is stored until one succeeds. */
  #feedHealthy = true;
  #lastCaughtUpMs: number | undefined;
  /** Requests answered by a database read (a render, or 404): however often the index was asked first. */
  #misses = 0;
  #settings: RuntimeSettings;
  #settingsVersion = 0;
  #settingsStale = true;
  #keptThroughOutage = 0;
  readonly #placeholders = new PlaceholderRefs();
  /** The clock as the last findKey() read it: the time of the fetch noteFetch() notes. */
  #lookupMs = 0;
  /** /sub fetches not written yet (flushFetches()). */
  readonly fetches: FetchLog;
  /**
   * The totals sweep (refreshTotals()): where its walk goes on (undefined: a pass starts), the users
   * in the table when the pass started, the users owed, and when it last ran.
   */
  #sweepAfter: SweepCursor | undefined;
  #passUsers: number | undefined;
  #sweepOwed = 0;
  /** When the sweep's pace was last taken; first the service's start, so the warm-up's records are owed. */
  #sweptAtMs: number;
  readonly #sweepPassMs: number;

  constructor(
    private readonly subscriptions: SubscriptionsRepository,
    private readonly index: SubscriptionIndex,
    private readonly logger: Logger,
    options: SubscriptionsOptions,
    private readonly settingsSource?: SettingsSource,
    /** Judges fetches of users whose devices are checked (features/devices); absent: none are. */
    private readonly devices?: DeviceGate,
  ) {
    this.#settings = {
      chooser: new FormatChooser(compileRules([])),
      allowById: true,
      answer: {
        bases: { version: 0, mihomo: {}, singbox: {} },
        updateInterval: "12",
        extras: [],
        publicUrl: null,
        webPageUrl: null,
        templated: [],
      },
      isPlain: true,
      page: { title: null, note: null, publicUrl: null },
      placeholders: DEFAULT_PLACEHOLDER_TEXTS,
      devices: {
        defaultLimit: 0,
        requireHwid: false,
        texts: { device_limit: "device limit reached", hwid_required: "no device id (HWID)" },
      },
    };
    this.fetches = new FetchLog(options.now ?? Date.now);
    this.#feed = new ChangeFeed(subscriptions, (changes) => this.#apply(changes));
    this.#now = options.now ?? Date.now;
    this.#maxAgeS = Math.floor(options.maxAgeMs / 1000);
    this.#sweepPassMs = sweepPassMs(this.#maxAgeS * 1000, options.sweepIntervalMs);
    this.#sweptAtMs = this.#now();
  }

  /**
   * Where the current record of the lowercase uuid at text[from, from + 36) is, or -1 (then
   * respond()). A record whose traffic totals are older than the maximum age is not current: its
   * links are still right (changes invalidate it), but its totals may not be.
   */
  find(text: string, from = 0): number {
    return this.index.find(text, from, Math.floor(this.#now() / 1000) - this.#maxAgeS);
  }

  /** Whether the settings were read (the fast path leaves requests to the route until then). */
  get isReady(): boolean {
    return !this.#settingsStale || this.settingsSource === undefined;
  }

  /** The settings requests use now (read at the start and whenever they change). */
  get settings(): RuntimeSettings {
    return this.#settings;
  }

  /** Reads the settings again (at the start, and after a change of them in the feed). */
  async loadSettings(): Promise<void> {
    if (this.settingsSource === undefined) return;
    this.#settingsStale = false;
    let s: Awaited<ReturnType<SettingsSource["get"]>>;
    try {
      s = await this.settingsSource.get();
    } catch (error) {
      this.#settingsStale = true; // read again next time, not never
      throw error;
    }
    const extras: string[] = [];
    // Header values go out as typed only when they cannot break the head (rows stored before names
    // were checked, or written to the database directly): headerSafe() percent-encodes the rest.
    if (s.support_url !== null) extras.push("support-url", headerSafe(s.support_url));
    if (s.announce !== null)
      extras.push("announce", `base64:${Buffer.from(s.announce, "utf8").toString("base64")}`);
    if (s.announce_url !== null) extras.push("announce-url", headerSafe(s.announce_url));
    if (s.routing !== null) extras.push("routing", headerSafe(s.routing));
    if (s.hide_settings) extras.push("hide-settings", "1");
    const templated: { name: string; value: string }[] = [];
    for (const header of s.custom_headers ?? []) {
      if (header.value.includes("{"))
        templated.push({ name: header.name.toLowerCase(), value: header.value });
      else extras.push(header.name.toLowerCase(), headerSafe(header.value));
    }
    const publicUrl = s.public_url === null ? null : headerSafe(s.public_url.replace(/\/+$/, ""));
    const webPageUrl = s.profile_web_page_url === null ? null : headerSafe(s.profile_web_page_url);
    const placeholders: PlaceholderTexts = {
      disabled: s.placeholder_disabled,
      expired: s.placeholder_expired,
      limited: s.placeholder_limited,
      limitedUntil: s.placeholder_limited_until,
    };
    const previous = this.#settings.placeholders;
    const previousDefaultLimit = this.#settings.devices.defaultLimit;
    const rules = compileRules(s.ua_rules);
    if (rules.skipped.length > 0) {
      this.logger.warn(
        { skipped: rules.skipped },
        "User-Agent rules skipped: saved before patterns had to match in linear time; fix them in the settings",
      );
    }
    this.#settings = {
      chooser: new FormatChooser(rules),
      allowById: s.allow_by_id,
      answer: {
        bases: {
          version: ++this.#settingsVersion,
          mihomo: parseYaml(s.mihomo_base) as RuntimeSettings["answer"]["bases"]["mihomo"],
          singbox: s.singbox_base as RuntimeSettings["answer"]["bases"]["singbox"],
        },
        updateInterval: String(s.update_interval_hours),
        extras,
        publicUrl,
        webPageUrl,
        templated,
      },
      isPlain:
        extras.length === 0 &&
        templated.length === 0 &&
        s.update_interval_hours === 12 &&
        publicUrl === null &&
        webPageUrl === null,
      page: { title: s.page_title, note: s.page_note, publicUrl },
      placeholders,
      devices: {
        defaultLimit: s.default_device_limit,
        requireHwid: s.require_hwid,
        texts: { device_limit: s.placeholder_device_limit, hwid_required: s.placeholder_hwid_required },
      },
    };
    // Records of users who get a placeholder hold its text (in their layout): other texts, read again.
    const textsChanged = (Object.keys(placeholders) as (keyof PlaceholderTexts)[]).some(
      (key) => placeholders[key] !== previous[key],
    );
    // Records say whether the user's devices are checked, which the default limit decides for most.
    if (textsChanged || this.#settings.devices.defaultLimit !== previousDefaultLimit) {
      this.index.clear();
      this.#placeholders.clear();
    }
  }

  /**
   * The current record of the key at text[from, from + length): a lowercase uuid (when the by-id
   * URL is on) or a sub token; -1 when there is none in memory.
   */
  findKey(text: string, from: number, length: number): number {
    const nowMs = this.#now();
    this.#lookupMs = nowMs;
    const notBeforeS = Math.floor(nowMs / 1000) - this.#maxAgeS;
    if (length === 36) return this.#settings.allowById ? this.index.find(text, from, notBeforeS) : -1;
    if (length === 32) return this.index.findToken(text, from, notBeforeS);
    return -1;
  }

  /** The answer of the record at `address` in a format (new header lists). */
  answerFormat(
    address: number,
    key: string,
    format: Format,
    ifNoneMatch: string | undefined,
  ): FormatResponse {
    const { index } = this;
    return formatAnswer(
      format,
      key,
      index.layoutAt(address),
      index.page(address),
      index.offset(address),
      ifNoneMatch,
      this.#settings.answer,
    );
  }

  /**
   * Any key (uuid or token) in any format: from memory, or read from the database; 404 when unknown.
   * While the database is unavailable a record kept in memory answers whatever its age (its totals
   * as last read, its layout as last known) rather than a 503: clients keep their configs through an
   * outage; what was fetched is noted and written once the database is back (fetch-log.ts).
   */
  async respondFormat(
    key: string,
    format: Format,
    ifNoneMatch: string | undefined,
    fetch?: Fetch,
  ): Promise<FormatResponse> {
    const lower = key.toLowerCase();
    const isId = isUuid(key);
    if (this.#settingsStale) await this.#loadSettingsUnlessUnavailable();
    if (!(isId && this.#settings.allowById) && !TOKEN_PATTERN.test(lower))
      throw new NotFoundError("subscription");
    const hit = this.findKey(lower, 0, lower.length);
    if (hit === NOT_BY_ID) throw new NotFoundError("subscription");
    if (hit >= 0) {
      if (fetch !== undefined) this.noteFetch(hit, fetch.userAgent);
      if (fetch !== undefined && this.checksDevices(hit)) {
        const { userId, userName } = userOf(this.index.page(hit), this.index.offset(hit));
        return this.#judged(userId, userName, lower, format, ifNoneMatch, fetch);
      }
      return this.answerFormat(hit, lower, format, ifNoneMatch);
    }
    try {
      return await this.#respondFromDatabase(lower, isId, format, ifNoneMatch, fetch);
    } catch (error) {
      if (!(error instanceof DatabaseUnavailableError)) throw error;
      const kept = this.index.findAnyAge(lower, isId);
      if (kept < 0) throw error;
      this.#keptThroughOutage++;
      if (fetch !== undefined) this.noteFetch(kept, fetch.userAgent);
      return this.answerFormat(kept, lower, format, ifNoneMatch);
    }
  }

  /** Answers served from memory because the database was unavailable (a record older than the max age). */
  get keptThroughOutage(): number {
    return this.#keptThroughOutage;
  }

  /** The settings read again; kept as they are while the database is unavailable. */
  async #loadSettingsUnlessUnavailable(): Promise<void> {
    try {
      await this.loadSettings();
    } catch (error) {
      if (!(error instanceof DatabaseUnavailableError)) throw error;
    }
  }

  async #respondFromDatabase(
    lower: string,
    isId: boolean,
    format: Format,
    ifNoneMatch: string | undefined,
    fetch: Fetch | undefined,
  ): Promise<FormatResponse> {
    await this.#feed.ready();
    const generation = this.index.generation;
    this.#misses++;
    const rows = isId
      ? await this.subscriptions.findSubscription(lower)
      : await this.subscriptions.findSubscriptionByToken(lower);
    if (rows === undefined) throw new NotFoundError("subscription");
    if (fetch !== undefined) this.fetches.note(rows.userId, fetch.userAgent);
    const refs = await this.#inbounds([rows], generation);
    const { input, grantRefs } = this.#entry(rows, refs);
    if (fetch !== undefined && input.checksDevices === true && !(isId && rows.isByIdRevoked)) {
      return this.#judged(rows.userId, rows.userName, lower, format, ifNoneMatch, fetch);
    }
    const address = this.#canStore() ? this.index.store(input, grantRefs, generation) : -1;
    // Kept (the token answers from memory, the id is refused without a read), but not by id.
    if (isId && rows.isByIdRevoked) throw new NotFoundError("subscription");
    const { page, at, layout } =
      address >= 0
        ? {
            page: this.index.page(address),
            at: this.index.offset(address),
            layout: this.index.layoutAt(address),
          }
        : this.index.transient(input, grantRefs);
    if (format === "mihomo" || format === "sing-box" || format === "xray-json") {
      const leftOut = layout.document(format, this.#settings.answer.bases).leftOut;
      if (leftOut.length > 0) {
        this.logger.warn(
          { user_id: rows.userId, format, left_out: leftOut },
          "entries this format cannot express left out",
        );
      }
    }
    return formatAnswer(format, lower, layout, page, at, ifNoneMatch, this.#settings.answer);
  }

  /** Whether the record at `address` is of a user whose devices are checked (the fast path leaves those to the route). */
  checksDevices(address: number): boolean {
    return (
      this.devices !== undefined && checksDevicesAt(this.index.page(address), this.index.offset(address))
    );
  }

  /**
   * The answer to a fetch by a user whose devices are checked: the device is judged (recorded, or
   * refused over the limit or without an HWID), then the links as for anyone (read again: the record
   * may have changed meanwhile) or one placeholder entry saying why; x-hwid-* headers either way.
   */
  async #judged(
    userId: string,
    userName: string,
    lower: string,
    format: Format,
    ifNoneMatch: string | undefined,
    fetch: Fetch,
  ): Promise<FormatResponse> {
    const policy = this.#settings.devices;
    const verdict = await (this.devices as DeviceGate).judge(
      userId,
      userName,
      fetch.device ?? { kind: "none" },
      policy,
    );
    const extra = hwidHeaders(verdict.refusal);
    let response: FormatResponse;
    if (verdict.refusal === undefined) {
      response = await this.respondFormat(lower, format, ifNoneMatch);
    } else {
      const rows = await this.subscriptions.findSubscription(userId);
      if (rows === undefined) throw new NotFoundError("subscription");
      const { input } = this.#entry(rows, new Map());
      const text = policy.texts[verdict.refusal];
      const { page, at, layout } = this.index.transient({ ...input, credentials: [NIL_UUID] }, [
        this.#placeholders.ref(text),
      ]);
      response = formatAnswer(format, lower, layout, page, at, ifNoneMatch, this.#settings.answer);
    }
    response.headers.push(...extra);
    return response;
  }

  /** What the subscription page shows of a user (their links and totals), or 404. */
  async pageData(key: string) {
    const lower = key.toLowerCase();
    const isId = isUuid(key);
    if (!(isId && this.#settings.allowById) && !TOKEN_PATTERN.test(lower))
      throw new NotFoundError("subscription");
    const rows = isId
      ? await this.subscriptions.findSubscription(lower)
      : await this.subscriptions.findSubscriptionByToken(lower);
    if (rows === undefined || (isId && rows.isByIdRevoked)) throw new NotFoundError("subscription");
    const refs = await this.subscriptions.listInbounds([...new Set(rows.grants.map((g) => g.inboundId))]);
    const byId = new Map(refs.map((row) => [row.id, row.isActive ? row.linkParams : null]));
    const links = await this.respondFormat(lower, "links", undefined);
    const [uploadBytes, downloadBytes] = usageOf(rows);
    const { lifecycle } = rows;
    const text = placeholderText(lifecycle, this.#settings.placeholders, new Date(this.#now()));
    return {
      userName: rows.userName,
      uploadBytes,
      downloadBytes,
      totalBytes: lifecycle.dataLimitBytes,
      expireAt: lifecycle.expireAt,
      status:
        text !== undefined
          ? { kind: "blocked" as const, text }
          : { kind: lifecycle.status === "on_hold" ? ("on_hold" as const) : ("active" as const) },
      links: bodyBytes(links.body ?? "")
        .toString("utf8")
        .split("\n")
        .filter((line) => !line.startsWith("#")),
      inbounds: byId.size,
    };
  }

  /** The answer of the record at `address` (from find()): fills `ok` and returns the body, or fills `notModified`. */
  answerInto(address: number, ifNoneMatch: string | undefined, ok: string[], notModified: string[]) {
    const { index } = this;
    return answerInto(
      index.layoutAt(address),
      index.page(address),
      index.offset(address),
      ifNoneMatch,
      ok,
      notModified,
    );
  }

  /** Whether the record at `address` needs answerFormat() even for plain base64 (its own announcement). */
  hasOwnHeaders(address: number): boolean {
    return hasOwnHeaders(this.index.page(address), this.index.offset(address));
  }

  /** The answer from memory, or undefined (then call respond()). */
  cached(userId: string, ifNoneMatch: string | undefined): SubscriptionResponse | undefined {
    const address = this.find(userId);
    if (address < 0) return undefined;
    const { index } = this;
    return responseOf(index.layoutAt(address), index.page(address), index.offset(address), ifNoneMatch);
  }

  /** 404 for an unknown user and for anything that is not a uuid (never a 400 or 500 to a polling app). */
  async respond(userId: string, ifNoneMatch: string | undefined): Promise<SubscriptionResponse> {
    if (!isUuid(userId)) throw new NotFoundError("user");
    const id = userId.toLowerCase();
    const hit = id === userId ? undefined : this.cached(id, ifNoneMatch);
    if (hit !== undefined) return hit;
    await this.#feed.ready();
    const generation = this.index.generation;
    this.#misses++;
    const rows = await this.subscriptions.findSubscription(id);
    if (rows === undefined) throw new NotFoundError("user", userId);
    const refs = await this.#inbounds([rows], generation);
    const { input, grantRefs } = this.#entry(rows, refs);
    const address = this.#canStore() ? this.index.store(input, grantRefs, generation) : -1;
    const { page, at, layout } =
      address >= 0
        ? {
            page: this.index.page(address),
            at: this.index.offset(address),
            layout: this.index.layoutAt(address),
          }
        : this.index.transient(input, grantRefs);
    const response = responseOf(layout, page, at, ifNoneMatch);
    const skipped = layout.template.lastSkipped;
    if (response.status === 200 && skipped > 0) {
      this.logger.warn({ user_id: id, skipped }, "subscription links left out");
    }
    return response;
  }

  /**
   * Applies every change committed before the call. A failed read empties the index instead, but
   * for a database that is unavailable: then nothing can change (every write goes through it), so
   * what is in memory is kept and keeps answering (nothing new is stored meanwhile), and the feed
   * goes on from its watermark once the database is back, applying what was committed before the
   * outage and not read yet. An outage longer than half the changes' retention empties it then.
   */
  async catchUp(): Promise<void> {
    try {
      await this.#feed.catchUp();
      if (this.#settingsStale) await this.loadSettings();
      const now = this.#now();
      const gapMs = now - (this.#lastCaughtUpMs ?? now);
      if (gapMs > (CHANGES_RETENTION_SECONDS * 1000) / 2) this.index.clear();
      this.#lastCaughtUpMs = now;
      this.#feedHealthy = true;
    } catch (error) {
      this.#feedHealthy = false;
      if (error instanceof DatabaseUnavailableError) {
        this.logger.warn(
          { err: error },
          "database unavailable: subscriptions in memory kept until it is back",
        );
        return;
      }
      this.index.clear();
      this.logger.warn({ err: error }, "subscription changes not read; subscriptions in memory dropped");
    }
  }

  /** Reads the inbounds of stale layouts again and revives those layouts (the job, after catchUp). */
  async reviveLayouts(): Promise<number> {
    const ids = this.index.staleInbounds();
    if (ids.length === 0 || !this.#canStore()) return 0;
    const generation = this.index.generation;
    const rows = await this.subscriptions.listInbounds(ids);
    this.index.adoptInbounds(rows.map(refOf), generation);
    return this.index.reviveLayouts();
  }

  /**
   * Reads every user into memory, oldest first, until all are there or the budget is full (after a
   * start). `betweenBatches` runs after each batch is stored (the job collects garbage there).
   */
  async warm(signal: AbortSignal, betweenBatches: () => void = () => {}): Promise<number> {
    await this.#feed.ready();
    if (this.#settingsStale) await this.loadSettings();
    let after: WarmCursor | undefined;
    let warmed = 0;
    for (let retries = 0; !signal.aborted && !this.index.isFull(); ) {
      const generation = this.index.generation;
      const page = await this.subscriptions.listSubscriptionsAfter(after, WARM_USERS_PER_BATCH);
      if (page.next === undefined) break;
      const missing = page.users.filter((user) => !this.index.has(user.userId));
      warmed += await this.#store(missing, generation);
      // Something changed while this batch was read: read it again (a few times at most).
      if (this.index.generation !== generation && retries < WARM_RETRIES_PER_BATCH) retries++;
      else [after, retries] = [page.next, 0];
      betweenBatches();
      await yieldToRequests();
    }
    return warmed;
  }

  /**
   * Keeps the traffic totals in memory current, so that records do not reach the max age while their
   * user polls: reads every user's used_bytes again (in the table's order, TOTALS_PER_BATCH a read) at a pace that
   * passes over all of them (as counted when the pass starts) in three quarters of the max age, or
   * less for a short one (sweepPassMs()); the pace is taken from the service's start. A
   * record loaded before the read began whose upload + download make that used_bytes counts as loaded
   * when the read began; for the others the sums of their active grants' counters are read (summed in
   * SQL: 13 µs a user on SQLite, against 27 for reading the grants as a miss does) and the split is
   * written in place. The job calls it every sync interval; a call owes the users of the time since
   * the last one (at most a pass) and spends at most TOTALS_BUDGET_MS on them (the rest waits).
   * Nothing else in a record changes without a change row, so a refreshed record is as right as a new
   * one. Returns how many records were refreshed.
   */
  async refreshTotals(): Promise<number> {
    const nowMs = this.#now();
    const elapsedMs = Math.max(0, nowMs - this.#sweptAtMs);
    this.#sweptAtMs = nowMs;
    if (!this.#canStore() || this.index.stats().entries === 0) return 0; // nothing to keep current
    this.#passUsers ??= await this.subscriptions.countUsers();
    this.#sweepOwed = Math.min(
      this.#passUsers,
      this.#sweepOwed + (this.#passUsers * elapsedMs) / this.#sweepPassMs,
    );
    let refreshed = 0;
    const deadline = performance.now() + TOTALS_BUDGET_MS;
    while (this.#sweepOwed >= 1 && performance.now() < deadline) {
      const limit = Math.min(TOTALS_PER_BATCH, Math.ceil(this.#sweepOwed));
      const readAtS = Math.floor(this.#now() / 1000);
      const { rows, next } = await this.subscriptions.listUsedAfter(this.#sweepAfter, limit);
      this.#sweepOwed -= limit;
      const changed: string[] = [];
      for (const row of rows) {
        const outcome = this.index.refreshUsed(row.userId, row.usedBytes, readAtS);
        if (outcome === "refreshed") refreshed++;
        else if (outcome === "changed") changed.push(row.userId);
      }
      if (changed.length > 0) {
        const splitAtS = Math.floor(this.#now() / 1000);
        for (const row of await this.subscriptions.listTotals(changed)) {
          const [upload, download] = splitUsage(row.usedBytes, row.uplinkBytes, row.downlinkBytes);
          if (this.index.refreshTotals(row.userId, upload, download, splitAtS)) refreshed++;
        }
      }
      if (rows.length < limit) {
        // The end of the users: the next call starts a pass (one pass a call at most).
        [this.#sweepAfter, this.#passUsers, this.#sweepOwed] = [undefined, undefined, 0];
        break;
      }
      this.#sweepAfter = next;
      await yieldToRequests();
    }
    return refreshed;
  }

  /** Deletes changes every instance has read (the job calls it now and then). */
  pruneChanges(): Promise<number> {
    return this.subscriptions.deleteChangesOlderThan(CHANGES_RETENTION_SECONDS);
  }

  stats(): SubscriptionStats {
    return { ...this.index.stats(), misses: this.#misses };
  }

  #canStore(): boolean {
    return this.#feed.isReady && this.#feedHealthy;
  }

  #apply(changes: readonly Change[]): void {
    for (const change of changes) {
      // Neither user nor inbound: the settings changed (migration 0014); catchUp() reads them again.
      if (change.userId === null && change.inboundId === null) this.#settingsStale = true;
      if (change.userId !== null) this.index.dropUser(change.userId);
      if (change.inboundId !== null) this.index.dropInbound(change.inboundId);
    }
  }

  /**
   * The user's record and the refs of its entries: their grants, or for a user who may not connect
   * one placeholder entry (the nil uuid on a ref whose remark says why) instead.
   */
  #entry(
    user: SubscriptionRows,
    refs: ReadonlyMap<string, InboundRef>,
  ): { input: Omit<RecordInput, "layoutSlot">; grantRefs: InboundRef[] } {
    const nowMs = this.#now();
    const { lifecycle } = user;
    const [uploadBytes, downloadBytes] = usageOf(user);
    const expireMs = lifecycle.expireAt === null ? 0 : Date.parse(lifecycle.expireAt);
    const input = {
      userId: user.userId,
      userName: user.userName,
      status: lifecycle.status,
      subToken: user.subToken,
      isByIdRevoked: user.isByIdRevoked,
      announce: user.announce,
      disposition: dispositionUnlessPlain(user.userName),
      credentials: user.grants.map((grant) => grant.credential),
      uploadBytes,
      downloadBytes,
      totalBytes: lifecycle.dataLimitBytes ?? 0,
      expireS: Number.isFinite(expireMs) ? Math.max(0, Math.floor(expireMs / 1000)) : 0,
      loadedAtS: Math.floor(nowMs / 1000),
      checksDevices: (user.deviceLimit ?? this.#settings.devices.defaultLimit) > 0,
    };
    const text = placeholderText(lifecycle, this.#settings.placeholders, new Date(nowMs));
    if (text !== undefined) {
      // No links to guard: the placeholder goes to every device.
      input.checksDevices = false;
      return { input: { ...input, credentials: [NIL_UUID] }, grantRefs: [this.#placeholders.ref(text)] };
    }
    const grantRefs = user.grants.map(
      (grant) => refs.get(grant.inboundId) ?? missingInbound(grant.inboundId),
    );
    return { input, grantRefs };
  }

  /**
   * Records a fetch of the record at `address`, just found by findKey() (fast path and route): no
   * allocation, no clock read, written in batches; a client's repeated fetches within
   * FETCH_RESOLUTION_S are noted once (fetch-log.ts).
   */
  noteFetch(address: number, userAgent: string | undefined): void {
    const page = this.index.page(address);
    const at = this.index.offset(address);
    if (markFetch(page, at, Math.floor(this.#lookupMs / 1000), userAgent))
      this.fetches.noteBytes(page, at + KEY, this.#lookupMs, userAgent);
  }

  /**
   * Writes the fetches noted since the last flush (the job every few seconds, within `budgetMs`: the
   * rest waits for the next; at shutdown all of them); how many users were written.
   */
  flushFetches(budgetMs?: number): Promise<number> {
    return this.fetches.flush((rows) => this.subscriptions.recordFetches(rows), budgetMs);
  }

  /** Keeps each user's record unless something was invalidated since `generation`; how many were kept. */
  async #store(users: readonly SubscriptionRows[], generation: number): Promise<number> {
    if (!this.#canStore()) return 0;
    const refs = await this.#inbounds(users, generation);
    let stored = 0;
    for (const user of users) {
      const { input, grantRefs } = this.#entry(user, refs);
      if (this.index.store(input, grantRefs, generation) >= 0) stored++;
    }
    return stored;
  }

  /** The inbounds of these users' grants: shared refs where the index has them, the rest read once. */
  async #inbounds(users: readonly SubscriptionRows[], generation: number): Promise<Map<string, InboundRef>> {
    const refs = new Map<string, InboundRef>();
    const missing = new Set<string>();
    for (const user of users) {
      for (const { inboundId } of user.grants) {
        const known = this.index.inbound(inboundId);
        if (known !== undefined) refs.set(inboundId, known);
        else missing.add(inboundId);
      }
    }
    if (missing.size === 0) return refs;
    const rows = await this.subscriptions.listInbounds([...missing]);
    for (const ref of this.index.adoptInbounds(rows.map(refOf), generation)) refs.set(ref.id, ref);
    return refs;
  }
}

/** upload and download of the current period: used_bytes split as the grants' counters are (splitUsage). */
function usageOf(user: SubscriptionRows): [number, number] {
  let uplink = 0;
  let downlink = 0;
  for (const grant of user.grants) {
    uplink += grant.uplinkBytes;
    downlink += grant.downlinkBytes;
  }
  return splitUsage(user.lifecycle.usedBytes, uplink, downlink);
}

function responseOf(
  layout: Layout,
  page: Buffer,
  at: number,
  ifNoneMatch: string | undefined,
): SubscriptionResponse {
  const ok = okHeaders();
  const notModified = notModifiedHeaders();
  const body = answerInto(layout, page, at, ifNoneMatch, ok, notModified);
  return body === undefined
    ? { status: 304, headers: notModified, body: undefined }
    : { status: 200, headers: ok, body };
}

function refOf(row: { id: string; isActive: boolean; linkParams: InboundRef["params"] }): InboundRef {
  return { id: row.id, params: row.isActive ? row.linkParams : null, isStale: false };
}

/** A grant whose inbound row is gone (deleted while this read ran; its change follows). */
function missingInbound(id: string): InboundRef {
  return { id, params: null, isStale: true };
}
