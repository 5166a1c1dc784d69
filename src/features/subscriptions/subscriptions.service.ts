// The subscription use case. A cached response answers when there is one (cached(), synchronous);
// otherwise one read of the user's grants, a pure render, and the result is kept. The cache is told
// what changed by the change feed: catchUp() before any API write answers (so an operator's next
// GET sees it) and every few seconds from the job (writes of other instances and processes).
// Rendering only reads: polling clients never write.
import { setImmediate as yieldToRequests } from "node:timers/promises";
import type { Logger } from "pino";
import { NotFoundError } from "../../lib/errors.ts";
import { isUuid } from "../../lib/uuid.ts";
import { entryOf, responseOf, type SubscriptionResponse, uncachedResponseOf } from "./cached-response.ts";
import { type Change, ChangeFeed } from "./change-feed.ts";
import { type RenderedSubscription, renderSubscription } from "./subscription.ts";
import type { CacheStats, InboundRef, SubscriptionCache, SubscriptionEntry } from "./subscription-cache.ts";
import type { SubscriptionRows, SubscriptionsRepository, WarmCursor } from "./subscriptions.repository.ts";

export type SubscriptionsOptions = {
  /** A cached response older than this is rendered again (its Subscription-Userinfo is at most this old). */
  maxAgeMs: number;
  now?: () => number;
};

export type SubscriptionStats = CacheStats & { misses: number };

/** Changes are kept this long for other instances; an instance that could not read them for half of it starts over. */
export const CHANGES_RETENTION_SECONDS = 600;
const WARM_USERS_PER_BATCH = 100;
const WARM_RETRIES_PER_BATCH = 3;

export class SubscriptionsService {
  readonly #feed: ChangeFeed;
  readonly #now: () => number;
  /** False after a failed read of the feed: nothing is stored until one succeeds. */
  #feedHealthy = true;
  #lastCaughtUpMs: number | undefined;
  /** Requests answered by a database read (a render, or 404): however often the cache was asked first. */
  #misses = 0;

  constructor(
    private readonly subscriptions: SubscriptionsRepository,
    private readonly cache: SubscriptionCache,
    private readonly logger: Logger,
    private readonly options: SubscriptionsOptions,
  ) {
    this.#feed = new ChangeFeed(subscriptions, (changes) => this.#apply(changes));
    this.#now = options.now ?? Date.now;
  }

  /**
   * The cached answer, or undefined (then call respond()). An entry older than maxAgeMs is a miss:
   * its links are still right (changes invalidate it), but its traffic totals may not be.
   */
  cached(userId: string, ifNoneMatch: string | undefined): SubscriptionResponse | undefined {
    const entry = this.cache.get(userId, this.#nowS() - Math.floor(this.options.maxAgeMs / 1000));
    return entry === undefined ? undefined : responseOf(entry, ifNoneMatch);
  }

  /** 404 for an unknown user and for anything that is not a uuid (never a 400 or 500 to a polling app). */
  async respond(userId: string, ifNoneMatch: string | undefined): Promise<SubscriptionResponse> {
    if (!isUuid(userId)) throw new NotFoundError("user");
    const id = userId.toLowerCase();
    const hit = id === userId ? undefined : this.cached(id, ifNoneMatch);
    if (hit !== undefined) return hit;
    await this.#feed.ready();
    const generation = this.cache.generation;
    this.#misses++;
    const rows = await this.subscriptions.findSubscription(id);
    if (rows === undefined) throw new NotFoundError("user", userId);
    const result = this.#render(rows, await this.#inbounds([rows], generation), generation);
    return uncachedResponseOf(result.rendered, ifNoneMatch, result.entry.etag);
  }

  /** Applies every change committed before the call. A failed read empties the cache instead. */
  async catchUp(): Promise<void> {
    try {
      await this.#feed.catchUp();
      const now = this.#now();
      const gapMs = now - (this.#lastCaughtUpMs ?? now);
      if (gapMs > (CHANGES_RETENTION_SECONDS * 1000) / 2) this.cache.clear();
      this.#lastCaughtUpMs = now;
      this.#feedHealthy = true;
    } catch (error) {
      this.#feedHealthy = false;
      this.cache.clear();
      this.logger.warn({ err: error }, "subscription changes not read; cached subscriptions dropped");
    }
  }

  /** Renders users, oldest first, until all are cached or the budget is full (after a start). */
  async warm(signal: AbortSignal): Promise<number> {
    await this.#feed.ready();
    let after: WarmCursor | undefined;
    let warmed = 0;
    for (let retries = 0; !signal.aborted && !this.cache.isFull(); ) {
      const generation = this.cache.generation;
      const page = await this.subscriptions.listSubscriptionsAfter(after, WARM_USERS_PER_BATCH);
      if (page.next === undefined) break;
      const missing = page.users.filter((user) => !this.cache.has(user.userId));
      warmed += await this.#renderAndStore(missing, generation);
      // Something changed while this batch was read: read it again (a few times at most).
      if (this.cache.generation !== generation && retries < WARM_RETRIES_PER_BATCH) retries++;
      else [after, retries] = [page.next, 0];
      await yieldToRequests();
    }
    return warmed;
  }

  /** Deletes changes every instance has read (the job calls it now and then). */
  pruneChanges(): Promise<number> {
    return this.subscriptions.deleteChangesOlderThan(CHANGES_RETENTION_SECONDS);
  }

  stats(): SubscriptionStats {
    return { ...this.cache.stats(), misses: this.#misses };
  }

  #nowS(): number {
    return Math.floor(this.#now() / 1000);
  }

  #apply(changes: readonly Change[]): void {
    for (const change of changes) {
      if (change.userId !== null) this.cache.dropUser(change.userId);
      if (change.inboundId !== null) this.cache.dropInbound(change.inboundId);
    }
  }

  /** Renders each user; stores the entries unless something was invalidated since `generation`. */
  async #renderAndStore(users: readonly SubscriptionRows[], generation: number): Promise<number> {
    const refs = await this.#inbounds(users, generation);
    let stored = 0;
    // One user at a time, nothing kept: a batch's results would outlive young-generation collections.
    for (const user of users) if (this.#render(user, refs, generation).stored) stored++;
    return stored;
  }

  #render(user: SubscriptionRows, refs: ReadonlyMap<string, InboundRef>, generation: number): Rendered {
    const inbounds = user.grants.map((grant) => refs.get(grant.inboundId) ?? missingInbound(grant.inboundId));
    const rendered = renderSubscription(this.#dataOf(user, refs));
    if (rendered.skipped > 0) {
      this.logger.warn({ user_id: user.userId, skipped: rendered.skipped }, "subscription links left out");
    }
    const entry = entryOf(rendered, inbounds, this.#nowS());
    const canStore = this.#feed.isReady && this.#feedHealthy;
    const stored = canStore && this.cache.set(user.userId, entry, generation);
    return { rendered, entry, stored };
  }

  /** The inbounds of these users' grants: shared refs where the cache has them, the rest read once. */
  async #inbounds(users: readonly SubscriptionRows[], generation: number): Promise<Map<string, InboundRef>> {
    const refs = new Map<string, InboundRef>();
    const missing = new Set<string>();
    for (const user of users) {
      for (const { inboundId } of user.grants) {
        const known = this.cache.inbound(inboundId);
        if (known !== undefined) refs.set(inboundId, known);
        else missing.add(inboundId);
      }
    }
    if (missing.size === 0) return refs;
    const rows = await this.subscriptions.listInbounds([...missing]);
    const loaded = rows.map(
      (row): InboundRef => ({
        id: row.id,
        params: row.isActive ? row.linkParams : null,
        reference: undefined,
        isStale: false,
      }),
    );
    for (const ref of this.cache.adoptInbounds(loaded, generation)) refs.set(ref.id, ref);
    return refs;
  }

  #dataOf(user: SubscriptionRows, refs: ReadonlyMap<string, InboundRef>) {
    return {
      userName: user.userName,
      grants: user.grants.map((grant) => ({
        credential: grant.credential,
        link_params: refs.get(grant.inboundId)?.params ?? null,
        uplink_bytes: grant.uplinkBytes,
        downlink_bytes: grant.downlinkBytes,
      })),
    };
  }
}

type Rendered = { rendered: RenderedSubscription; entry: SubscriptionEntry; stored: boolean };

/** A grant whose inbound row is gone (deleted while this read ran; its change follows). */
function missingInbound(id: string): InboundRef {
  return { id, params: null, reference: undefined, isStale: true };
}
