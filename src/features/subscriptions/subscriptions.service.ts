// The subscription use case. Every user's subscription is kept as compact values in memory by the
// engine (engine/engine.ts) and rendered here on each request; a user who is not there (new, changed,
// over the budget) costs one read of their grants, and is kept. The engine is told what changed by
// the change feed: catchUp() before any API write answers (so an operator's next GET sees it) and
// every second from the job (writes of other instances and processes). This file holds what the
// engine does not know: the settings, how a user's rows become a record (placeholders), the formats.
// Rendering only reads: polling clients never write.

import type { Logger } from "pino";
import { parse as parseYaml } from "yaml";
import { DatabaseUnavailableError, NotFoundError } from "../../lib/errors.ts";
import type { Format } from "../../lib/subscription-formats.ts";
import { headerSafe } from "../../lib/text.ts";
import { isUuid } from "../../lib/uuid.ts";
import type { DeviceGate } from "../devices/devices.service.ts";
import { type DeviceClaim, type DeviceRefusal, hwidHeaders } from "../devices/hwid.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import type { SubscriptionSettings } from "../subscription-settings/subscription-settings.schemas.ts";
import {
  type AnswerSettings,
  answerInto,
  bodyBytes,
  type FormatResponse,
  fillSettingsValues,
  formatAnswer,
  hasOwnHeaders,
  notModifiedHeaders,
  okHeaders,
  type SettingsOkHeaders,
} from "./answer.ts";
import { type EngineStats, type Entry, missingInbound, SubscriptionEngine } from "./engine/engine.ts";
import type { FetchLog } from "./engine/fetch-log.ts";
import { NOT_BY_ID } from "./engine/subscription-index.ts";
import { checksDevicesAt, splitUsage, userOf } from "./engine/user-record.ts";
import { compileRules, FormatChooser } from "./formats.ts";
import { HeaderTemplates } from "./header-templates.ts";
import type { InboundRef, Layout, LayoutTemplates, SubscriptionIndex } from "./layout-templates.ts";
import {
  DEFAULT_PLACEHOLDER_TEXTS,
  NIL_UUID,
  PlaceholderRefs,
  type PlaceholderTexts,
  placeholderText,
} from "./placeholders.ts";
import { dispositionUnlessPlain } from "./subscription.ts";
import type { SubscriptionRows, SubscriptionsRepository } from "./subscriptions.repository.ts";

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

export type SubscriptionStats = EngineStats;

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

type Engine = SubscriptionEngine<LinkParams, LayoutTemplates, SubscriptionRows>;

export class SubscriptionsService {
  readonly #subscriptions: SubscriptionsRepository;
  readonly #engine: Engine;
  readonly #now: () => number;
  #settings: RuntimeSettings;
  #settingsVersion = 0;
  #settingsStale = true;
  #keptThroughOutage = 0;
  readonly #placeholders = new PlaceholderRefs();

  constructor(
    subscriptions: SubscriptionsRepository,
    index: SubscriptionIndex,
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
        templated: new HeaderTemplates([]),
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
    this.#now = options.now ?? Date.now;
    this.#engine = new SubscriptionEngine(subscriptions, index, logger, {
      maxAgeMs: options.maxAgeMs,
      sweepIntervalMs: options.sweepIntervalMs,
      now: this.#now,
      entryOf: (user, refs) => this.#entry(user, refs),
      onSettingsChanged: () => {
        this.#settingsStale = true;
      },
    });
    this.#subscriptions = subscriptions;
  }

  /** /sub fetches not written yet (flushFetches()). */
  get fetches(): FetchLog {
    return this.#engine.fetches;
  }

  /**
   * Where the current record of the lowercase uuid at text[from, from + 36) is, or -1 (then
   * respond()). A record whose traffic totals are older than the maximum age is not current: its
   * links are still right (changes invalidate it), but its totals may not be.
   */
  find(text: string, from = 0): number {
    return this.#engine.find(text, from);
  }

  /** Whether the settings were read (the fast path leaves requests to the route until then). */
  get isReady(): boolean {
    return !this.#settingsStale || this.settingsSource === undefined;
  }

  /** The public base URL subscription URLs start with ("" for a path alone), as the settings say now. */
  publicUrl(): string {
    return this.#settings.page.publicUrl ?? "";
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
        templated: new HeaderTemplates(templated),
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
      this.#engine.clear();
      this.#placeholders.clear();
    }
  }

  /**
   * The current record of the key at text[from, from + length): a lowercase uuid (when the by-id
   * URL is on) or a sub token; -1 when there is none in memory.
   */
  findKey(text: string, from: number, length: number): number {
    return this.#engine.findKey(text, from, length, this.#settings.allowById);
  }

  /** The answer of the record at `address` in a format (new header lists). */
  answerFormat(
    address: number,
    key: string,
    format: Format,
    ifNoneMatch: string | undefined,
  ): FormatResponse {
    const { index } = this.#engine;
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
        const { page, at } = this.#engine.view(hit);
        const { userId, userName } = userOf(page, at);
        return this.#judged(userId, userName, lower, format, ifNoneMatch, fetch);
      }
      return this.answerFormat(hit, lower, format, ifNoneMatch);
    }
    try {
      return await this.#respondFromDatabase(lower, isId, format, ifNoneMatch, fetch);
    } catch (error) {
      if (!(error instanceof DatabaseUnavailableError)) throw error;
      const kept = this.#engine.findAnyAge(lower, isId);
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
    const loaded = await this.#engine.load(() =>
      isId ? this.#subscriptions.findSubscription(lower) : this.#subscriptions.findSubscriptionByToken(lower),
    );
    if (loaded === undefined) throw new NotFoundError("subscription");
    const rows = loaded.user;
    if (fetch !== undefined) this.fetches.note(rows.userId, fetch.userAgent);
    if (fetch !== undefined && loaded.entry.input.checksDevices === true && !(isId && rows.isByIdRevoked)) {
      return this.#judged(rows.userId, rows.userName, lower, format, ifNoneMatch, fetch);
    }
    // Kept (the token answers from memory, the id is refused without a read), but not by id.
    if (isId && rows.isByIdRevoked) throw new NotFoundError("subscription");
    const { page, at, layout } = loaded.view;
    if (format === "mihomo" || format === "sing-box" || format === "xray-json") {
      const leftOut = layout.templates.document(format, this.#settings.answer.bases).leftOut;
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
      this.devices !== undefined &&
      checksDevicesAt(this.#engine.index.page(address), this.#engine.index.offset(address))
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
      const rows = await this.#subscriptions.findSubscription(userId);
      if (rows === undefined) throw new NotFoundError("subscription");
      const { input } = this.#entry(rows, new Map());
      const text = policy.texts[verdict.refusal];
      const { page, at, layout } = this.#engine.index.transient({ ...input, credentials: [NIL_UUID] }, [
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
      ? await this.#subscriptions.findSubscription(lower)
      : await this.#subscriptions.findSubscriptionByToken(lower);
    if (rows === undefined || (isId && rows.isByIdRevoked)) throw new NotFoundError("subscription");
    const refs = await this.#subscriptions.listInbounds([...new Set(rows.grants.map((g) => g.inboundId))]);
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
    const { index } = this.#engine;
    return answerInto(
      index.layoutAt(address),
      index.page(address),
      index.offset(address),
      ifNoneMatch,
      ok,
      notModified,
    );
  }

  /** The values of a settings list (settingsOkHeaders()) that come from the key and the record at `address`. */
  fillSettingsValues(headers: SettingsOkHeaders, address: number, key: string): void {
    const { index } = this.#engine;
    fillSettingsValues(headers, key, index.page(address), index.offset(address));
  }

  /** Whether the record at `address` needs answerFormat() even for base64 (its own announcement). */
  hasOwnHeaders(address: number): boolean {
    const { index } = this.#engine;
    return hasOwnHeaders(index.page(address), index.offset(address));
  }

  /** The answer from memory, or undefined (then call respond()). */
  cached(userId: string, ifNoneMatch: string | undefined): SubscriptionResponse | undefined {
    const address = this.find(userId);
    if (address < 0) return undefined;
    const { page, at, layout } = this.#engine.view(address);
    return responseOf(layout, page, at, ifNoneMatch);
  }

  /** 404 for an unknown user and for anything that is not a uuid (never a 400 or 500 to a polling app). */
  async respond(userId: string, ifNoneMatch: string | undefined): Promise<SubscriptionResponse> {
    if (!isUuid(userId)) throw new NotFoundError("user");
    const id = userId.toLowerCase();
    const hit = id === userId ? undefined : this.cached(id, ifNoneMatch);
    if (hit !== undefined) return hit;
    const loaded = await this.#engine.load(() => this.#subscriptions.findSubscription(id));
    if (loaded === undefined) throw new NotFoundError("user", userId);
    const { page, at, layout } = loaded.view;
    const response = responseOf(layout, page, at, ifNoneMatch);
    const skipped = layout.templates.template.lastSkipped;
    if (response.status === 200 && skipped > 0) {
      this.logger.warn({ user_id: id, skipped }, "subscription links left out");
    }
    return response;
  }

  /**
   * Applies every change committed before the call, and reads the settings again when they changed
   * (the engine keeps what it has through a database outage: engine.ts catchUp()).
   */
  catchUp(): Promise<void> {
    return this.#engine.catchUp(async () => {
      if (this.#settingsStale) await this.loadSettings();
    });
  }

  /** Reads the inbounds of stale layouts again and revives those layouts (the job, after catchUp). */
  reviveLayouts(): Promise<number> {
    return this.#engine.reviveLayouts();
  }

  /**
   * Reads every user into memory, oldest first, until all are there or the budget is full (after a
   * start). `betweenBatches` runs after each batch is stored (the job collects garbage there).
   */
  async warm(signal: AbortSignal, betweenBatches: () => void = () => {}): Promise<number> {
    await this.#engine.ready();
    if (this.#settingsStale) await this.loadSettings();
    return this.#engine.warm(signal, betweenBatches);
  }

  /** Keeps the traffic totals in memory current (the job, every sync interval: engine.ts refreshTotals()). */
  refreshTotals(): Promise<number> {
    return this.#engine.refreshTotals();
  }

  /** Deletes changes every instance has read (the job calls it now and then). */
  pruneChanges(): Promise<number> {
    return this.#engine.pruneChanges();
  }

  stats(): SubscriptionStats {
    return this.#engine.stats();
  }

  /**
   * The user's record and the refs of its entries: their grants, or for a user who may not connect
   * one placeholder entry (the nil uuid on a ref whose remark says why) instead.
   */
  #entry(user: SubscriptionRows, refs: ReadonlyMap<string, InboundRef>): Entry<LinkParams> {
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
      (grant) => refs.get(grant.inboundId) ?? missingInbound<LinkParams>(grant.inboundId),
    );
    return { input, grantRefs };
  }

  /** Records a fetch of the record at `address`, just found by findKey() (engine.ts noteFetch()). */
  noteFetch(address: number, userAgent: string | undefined): void {
    this.#engine.noteFetch(address, userAgent);
  }

  /** Writes the fetches noted since the last flush (engine.ts flushFetches()). */
  flushFetches(budgetMs?: number): Promise<number> {
    return this.#engine.flushFetches(budgetMs);
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
