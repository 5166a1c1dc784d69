// The subscription cache's parts without I/O: its byte bound and CLOCK eviction, invalidation by user
// and by inbound, the generation guard, the record layout, the body deltas (property-tested against
// arbitrary bodies), and the change feed's cursor over out-of-order PostgreSQL commits.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";
import fc from "fast-check";
import { loadConfig } from "../../config/config.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import { decodeBody, encodeBody } from "./body-delta.ts";
import { CachePages } from "./cache-pages.ts";
import { recordLength, viewAt, writeRecord } from "./cache-record.ts";
import { advance, type Change, type FeedCursor } from "./change-feed.ts";
import { bodyOf, type InboundRef, SubscriptionCache, type SubscriptionEntry } from "./subscription-cache.ts";

const PARAMS: LinkParams = {
  version: 1,
  protocol: "trojan",
  host: "a.example",
  port: 443,
  remark: "A",
  transport: { type: "tcp" },
  security: { type: "tls", sni: "a.example" },
};

function inboundRef(): InboundRef {
  return { id: randomUUID(), params: PARAMS, reference: "trojan://ref@a.example:443#A", isStale: false };
}

function entry(inbounds: readonly InboundRef[], name = "user"): SubscriptionEntry {
  const links = inbounds.map((_, i) => `trojan://secret-${i}-${name}@a.example:443#A`);
  return {
    inbounds,
    body: Buffer.from(links.join("\n")).toString("base64"),
    etag: `"${name}"`,
    userinfo: "upload=0; download=0; total=0; expire=0",
    title: `base64:${Buffer.from(name).toString("base64")}`,
    disposition: `attachment; filename="${name}"`,
    renderedAtS: 1,
  };
}

/** A cache with one shared inbound, the way the service adopts what it read. */
function cacheWith(budgetBytes: number, pageBytes?: number) {
  const cache = new SubscriptionCache(budgetBytes, pageBytes);
  const [inbound] = cache.adoptInbounds([inboundRef()], cache.generation);
  assert.ok(inbound !== undefined && cache.inbound(inbound.id) === inbound);
  return { cache, inbound };
}

describe("SubscriptionCache", () => {
  test("stays within its byte budget: the oldest unread entries are evicted", () => {
    const { cache, inbound } = cacheWith(8 * 1024, 1024);
    const users = Array.from({ length: 200 }, () => randomUUID());
    for (const id of users) assert.equal(cache.set(id, entry([inbound], id), cache.generation), true);
    const stats = cache.stats();
    assert.ok(stats.bytes <= 8 * 1024, `${stats.bytes} bytes`);
    assert.ok(stats.evictions > 150 && stats.entries < 50, JSON.stringify(stats));
    assert.equal(cache.get(users[0] as string), undefined, "the first one went first");
    const last = users.at(-1) as string;
    const hit = cache.get(last);
    assert.equal(hit?.etag, `"${last}"`);
    assert.equal(bodyOf(hit), entry([inbound], last).body);
  });

  test("an entry read since it was written survives the next sweep of its page (CLOCK)", () => {
    const { cache, inbound } = cacheWith(4 * 1024, 1024);
    const [hot, ...rest] = Array.from({ length: 40 }, () => randomUUID());
    assert.ok(hot !== undefined);
    cache.set(hot, entry([inbound], hot), cache.generation);
    for (const id of rest) {
      assert.ok(cache.get(hot), "read before its page is swept");
      cache.set(id, entry([inbound], id), cache.generation);
    }
    assert.equal(cache.get(hot)?.etag, `"${hot}"`);
    assert.ok(cache.stats().evictions > 0);
  });

  test("a user change drops one entry; an inbound change every entry on that inbound", () => {
    const { cache, inbound } = cacheWith(1 << 20);
    const [other] = cache.adoptInbounds([inboundRef()], cache.generation);
    assert.ok(other !== undefined);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    cache.set(a, entry([inbound]), cache.generation);
    cache.set(b, entry([inbound, other]), cache.generation);
    cache.set(c, entry([other]), cache.generation);
    cache.dropUser(c);
    assert.equal(cache.get(c), undefined);
    cache.dropInbound(inbound.id);
    assert.equal(cache.get(a), undefined);
    assert.equal(cache.get(b), undefined);
    assert.equal(cache.inbound(inbound.id), undefined, "the next render reads the inbound again");
    assert.equal(cache.inbound(other.id), other);
  });

  test("a render that started before an invalidation is not stored after it", () => {
    const { cache, inbound } = cacheWith(1 << 20);
    const generation = cache.generation;
    cache.dropUser(randomUUID());
    const id = randomUUID();
    assert.equal(cache.set(id, entry([inbound]), generation), false);
    assert.equal(cache.get(id), undefined);
    const late = inboundRef();
    const [used] = cache.adoptInbounds([late], generation);
    assert.equal(used?.isStale, true, "used once, never stored");
    assert.equal(cache.inbound(late.id), undefined, "not shared");
  });

  test("a disabled cache (budget 0) stores nothing", () => {
    const cache = new SubscriptionCache(0);
    const [inbound] = cache.adoptInbounds([inboundRef()], cache.generation);
    assert.ok(inbound);
    assert.equal(cache.set(randomUUID(), entry([inbound]), cache.generation), false);
    assert.equal(cache.isFull(), true);
  });

  test("a budget of less than eight default pages gets smaller pages, not an endless sweep", () => {
    const { cache, inbound } = cacheWith(64 * 1024);
    for (let i = 0; i < 500; i++) cache.set(randomUUID(), entry([inbound], `u${i}`), cache.generation);
    const stats = cache.stats();
    assert.ok(stats.entries > 50 && stats.evictions > 0, JSON.stringify(stats));
    assert.ok(stats.bytes <= 64 * 1024, `${stats.bytes} bytes`);
  });

  test("pages that cannot fit beside the other memory store nothing and say so", () => {
    const pages = new CachePages(1024, 1024, () => 1, 1);
    assert.equal(
      pages.store(randomUUID(), 100, () => assert.fail("nothing is written")),
      false,
    );
    assert.equal(pages.entries, 0);
  });

  test("the budget holds with many layouts and records that shrink; full layouts start the cache over", () => {
    const budget = 32 * 1024;
    const cache = new SubscriptionCache(budget, 2048);
    const refs = cache.adoptInbounds(
      Array.from({ length: 40 }, () => inboundRef()),
      cache.generation,
    );
    for (let i = 0; i < 3000; i++) {
      // A different pair of inbounds every few users (new layouts), names getting shorter (more, smaller records).
      const pair = [refs[i % refs.length], refs[(i * 7 + 1) % refs.length]] as InboundRef[];
      cache.set(randomUUID(), entry(pair, "x".repeat(1 + ((3000 - i) % 200))), cache.generation);
      const { bytes } = cache.stats();
      assert.ok(bytes <= budget, `${bytes} bytes after ${i + 1} stores`);
    }
    const stats = cache.stats();
    assert.ok(stats.layoutResets > 0 && stats.entries > 0, JSON.stringify(stats));
  });

  test("an entry rendered before the given second is a miss; has() ignores retired layouts", () => {
    const { cache, inbound } = cacheWith(1 << 20);
    const id = randomUUID();
    cache.set(id, { ...entry([inbound]), renderedAtS: 100 }, cache.generation);
    assert.equal(cache.get(id, 100)?.renderedAtS, 100);
    const { hits } = cache.stats();
    assert.equal(cache.get(id, 101), undefined, "older than the bound");
    assert.equal(cache.stats().hits, hits, "not a hit");
    assert.equal(cache.has(id), true);
    cache.dropInbound(inbound.id);
    assert.equal(cache.has(id), false);
  });

  test("users with the same grants share one layout; each record keeps only its differences", () => {
    const { cache, inbound } = cacheWith(1 << 20);
    for (let i = 0; i < 50; i++) cache.set(randomUUID(), entry([inbound], `u${i}`), cache.generation);
    const stats = cache.stats();
    assert.equal(stats.layouts, 1);
    assert.equal(stats.entries, 50);
  });
});

describe("cache records", () => {
  test("round-trip their fields; text that is not latin1 is refused", () => {
    const fields = {
      userId: randomUUID(),
      layoutSlot: 70_000,
      renderedAtS: 1_800_000_000,
      body: "\u0000\u0001abc",
      etag: '"e"',
      userinfo: "upload=1; download=2; total=0; expire=0",
      title: "base64:QQ==",
      disposition: 'attachment; filename="x"',
    };
    const length = recordLength(fields);
    assert.ok(length !== undefined);
    const page = Buffer.alloc(length + 10);
    writeRecord(page, 10, fields, length);
    const { bodyStart, bodyEnd, ...view } = viewAt(page, 10);
    const { renderedAtS, etag, userinfo, title, disposition } = fields;
    assert.deepEqual(view, { renderedAtS, etag, userinfo, title, disposition });
    assert.equal(page.toString("latin1", bodyStart, bodyEnd), fields.body);
    assert.equal(recordLength({ ...fields, title: "Zoë ✓" }), undefined);
  });
});

describe("body deltas", () => {
  const base64 = fc.stringMatching(/^[A-Za-z0-9+/]{0,300}={0,2}$/);
  test("decode(encode(body, reference)) is the body, for any body and reference", () => {
    fc.assert(
      fc.property(base64, base64, (body, reference) => {
        const encoded = encodeBody(body, reference);
        assert.ok(encoded !== undefined);
        // Stored at an offset inside a larger page, as the cache does.
        const source = Buffer.concat([Buffer.from("xyz"), Buffer.from(encoded, "latin1"), Buffer.from("!")]);
        assert.equal(decodeBody(source, 3, source.length - 1, reference), body);
      }),
    );
  });

  test("bodies of the same layout cost little more than their differences", () => {
    const link = () =>
      `vless://${randomUUID()}@fra1.vpn.example.net:443?encryption=none&security=tls&type=ws#de-fra-1`;
    const body = (links: string[]) => Buffer.from(links.join("\n")).toString("base64");
    const reference = body([link(), link()]);
    const encoded = encodeBody(body([link(), link()]), reference);
    assert.ok(encoded !== undefined && encoded.length < 2 + 2 * (4 + 56), `${encoded?.length} bytes`);
    assert.ok(reference.length > 240);
  });
});

describe("change feed cursor", () => {
  const change = (seq: number, order: number): Change => ({ seq, order, userId: `u${seq}`, inboundId: null });
  const start: FeedCursor = { watermark: 100, seen: new Map() };

  test("a change committed late with an older transaction id is still applied, once", () => {
    // Transaction 101 (seq 2) commits after 102 (seq 3): the first read sees only seq 3, and xmin 101.
    const first = advance(start, { changes: [change(3, 102)], settled: 101 });
    assert.deepEqual(
      first.fresh.map((c) => c.seq),
      [3],
    );
    const second = advance(first.cursor, { changes: [change(2, 101), change(3, 102)], settled: 103 });
    assert.deepEqual(
      second.fresh.map((c) => c.seq),
      [2],
      "seq 3 is not applied again",
    );
    assert.equal(second.cursor.watermark, 103);
    assert.equal(second.cursor.seen.size, 0, "nothing below the watermark is remembered");
  });

  test("the watermark never goes back", () => {
    const { cursor } = advance({ watermark: 500, seen: new Map() }, { changes: [], settled: 400 });
    assert.equal(cursor.watermark, 500);
  });
});

test("settings: PORTCULLIS_SUB_CACHE_MB (64), _SYNC_MS (1000), _MAX_AGE_MS (300000); 0 turns the cache off", () => {
  assert.deepEqual(loadConfig({}).subscriptions, {
    cacheBytes: 64 * 2 ** 20,
    syncIntervalMs: 1000,
    maxAgeMs: 300_000,
  });
  assert.equal(loadConfig({ PORTCULLIS_SUB_CACHE_MB: "0" }).subscriptions.cacheBytes, 0);
  assert.throws(() => loadConfig({ PORTCULLIS_SUB_CACHE_SYNC_MS: "10" }), /PORTCULLIS_SUB_CACHE_SYNC_MS/);
});
