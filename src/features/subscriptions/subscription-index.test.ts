// The subscription index's parts without I/O: its answers equal the pure renderer's byte for byte
// (property-tested over protocols, transports, credentials of every kind and names), the secret
// writers agree with the link builders, the base64 stream with Buffer's encoder, the record store
// keeps what it is given within its budget, invalidation by user and by inbound (and revival), the
// generation guard, and the change feed's cursor over out-of-order PostgreSQL commits.
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { validateHeaderValue } from "node:http";
import { describe, test } from "node:test";
import fc from "fast-check";
import { loadConfig } from "../../config/config.ts";
import { linkShapesOf } from "../access/links.ts";
import type { LinkParams } from "../inbounds/link-params.ts";
import { answerInto, NOT_MODIFIED_VALUES, notModifiedHeaders, OK_VALUES, okHeaders } from "./answer.ts";
import { base64Of, encodeGroups, latin1Of, STANDARD, TextBuffer, URL_SAFE } from "./base64.ts";
import { advance, type Change, type FeedCursor } from "./engine/change-feed.ts";
import { RecordStore } from "./engine/record-store.ts";
import {
  credentialsAt,
  credentialText,
  KEY,
  NAME,
  prepareRecord,
  type RecordInput,
  writeRecord,
} from "./engine/user-record.ts";
import { RequestIds } from "./fast-path.ts";
import type { InboundRef } from "./layout-templates.ts";
import { type SubscriptionIndex, subscriptionIndex } from "./layout-templates.ts";
import { secretWriterFor } from "./secret-writers.ts";
import { dispositionUnlessPlain, renderSubscription, userinfoOf } from "./subscription.ts";

const PBK = "Z84J2IelR9ch3k8VtlVhhs5ycBUlXA7wHBWcBrjqnAw";
const base = { version: 1, host: "fra1.example.net", port: 443 } as const;
/** One inbound of each kind the builders know, and one no link can be made of (REALITY over ws). */
const PARAMS: LinkParams[] = [
  {
    ...base,
    protocol: "vless",
    remark: "de vless-reality",
    transport: { type: "tcp" },
    security: {
      type: "reality",
      sni: "www.microsoft.com",
      publicKey: PBK,
      shortId: "6ba8",
      fingerprint: "chrome",
    },
    vlessEncryption: "none",
    vlessFlow: "xtls-rprx-vision",
  },
  {
    ...base,
    protocol: "vless",
    port: 8443,
    remark: "de vless-ws",
    transport: { type: "ws", path: "/v ws", host: "fra1.example.net" },
    security: { type: "tls", sni: "fra1.example.net", alpn: ["http/1.1"] },
    vlessEncryption: "none",
  },
  {
    ...base,
    protocol: "trojan",
    remark: "de trojan",
    transport: { type: "tcp" },
    security: { type: "tls", sni: "fra1.example.net" },
  },
  {
    ...base,
    protocol: "vmess",
    remark: "nl vmess ✓ Zürich",
    transport: { type: "ws", path: "/vm", host: "ams1.example.net" },
    security: { type: "tls", sni: "ams1.example.net" },
  },
  {
    ...base,
    protocol: "vmess",
    remark: "vmess plain",
    transport: { type: "grpc", serviceName: "gs", mode: "gun" },
    security: { type: "none" },
  },
  {
    ...base,
    protocol: "shadowsocks",
    remark: "ss 2022 multi",
    transport: { type: "tcp" },
    security: { type: "none" },
    shadowsocksMethod: "2022-blake3-aes-128-gcm",
    shadowsocksServerKey: randomBytes(16).toString("base64"),
  },
  {
    ...base,
    protocol: "shadowsocks",
    remark: "ss 2022 single",
    transport: { type: "tcp" },
    security: { type: "none" },
    shadowsocksMethod: "2022-blake3-aes-256-gcm",
  },
  {
    ...base,
    protocol: "shadowsocks",
    remark: "ss aead",
    transport: { type: "tcp" },
    security: { type: "none" },
    shadowsocksMethod: "chacha20-poly1305",
  },
  {
    ...base,
    protocol: "vless",
    remark: "reality over ws: no link",
    transport: { type: "ws", path: "/x" },
    security: { type: "reality", sni: "a.example", publicKey: PBK, shortId: "", fingerprint: "chrome" },
    vlessEncryption: "none",
  },
];

/** Credentials of every kind: uuids (any case), URL-safe tokens, 16/32-byte keys, odd text. */
const credential = fc.oneof(
  fc.uuid().map((id) => id.toLowerCase()),
  fc.uuid().map((id) => id.toUpperCase()),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
  fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b).toString("base64")),
  fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("base64")),
  fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b) => Buffer.from(b).toString("base64")),
  fc.string({ maxLength: 12 }),
  fc.constant(""),
);
const userName = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9._-]{1,30}$/),
  fc.string({ minLength: 1, maxLength: 30 }),
  fc.constantFrom("Пользователь 7", "Zoë Ünïcode", 'quote " and \\', "ユーザー"),
  // What would break a header if it reached a value as it is.
  fc.constantFrom("a\r\nSet-Cookie: x=1", "line\nfeed", "tab\there", "nul\u0000", "del\u007f"),
  // Up to the longest name the API takes, in 4-byte characters: past the reused buffers' first size.
  fc.string({ unit: "binary", minLength: 100, maxLength: 128 }),
);
/** A layout: some of the inbounds (repeats allowed: duplicate remarks), some inactive. */
const grants = fc.array(
  fc.record({ params: fc.constantFrom(...PARAMS), isActive: fc.boolean(), credential }),
  { maxLength: 7 },
);
const traffic = fc.oneof(fc.constant(0), fc.nat(), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }));

function refsOf(list: readonly { params: LinkParams; isActive: boolean }[]): InboundRef[] {
  return list.map((grant) => ({
    id: randomUUID(),
    params: grant.isActive ? grant.params : null,
    isStale: false,
  }));
}

function inputOf(
  name: string,
  credentials: string[],
  upload = 0,
  download = 0,
): Omit<RecordInput, "layoutSlot"> {
  return {
    userId: randomUUID(),
    userName: name,
    disposition: dispositionUnlessPlain(name),
    credentials,
    uploadBytes: upload,
    downloadBytes: download,
    loadedAtS: 1000,
  };
}

/** The answer the index gives for a stored record. */
function answerOf(index: SubscriptionIndex, address: number, ifNoneMatch?: string) {
  const ok = okHeaders();
  const notModified = notModifiedHeaders();
  const body = answerInto(
    index.layoutAt(address),
    index.page(address),
    index.offset(address),
    ifNoneMatch,
    ok,
    notModified,
  );
  return { body, ok, notModified };
}

describe("answers from the index", () => {
  test("equal the pure renderer's body and headers, for any layout, credentials and name", () => {
    const index = subscriptionIndex(64 * 2 ** 20);
    fc.assert(
      fc.property(grants, userName, traffic, traffic, (list, name, upload, download) => {
        const refs = index.adoptInbounds(refsOf(list), index.generation);
        const input = inputOf(
          name,
          list.map((g) => g.credential),
          upload,
          download,
        );
        const address = index.store(input, refs, index.generation);
        assert.ok(address >= 0);
        const expected = renderSubscription({
          userName: name,
          grants: list.map((g, i) => ({
            credential: g.credential,
            link_params: refs[i]?.params ?? null,
            uplink_bytes: 0,
            downlink_bytes: 0,
          })),
        });
        const { body, ok } = answerOf(index, address);
        assert.equal(body, expected.body);
        const userinfo = userinfoOf(upload, download);
        assert.deepEqual(
          [ok[3], ok[5], ok[9]],
          [userinfo, expected.headers.title, expected.headers.disposition],
        );
        assert.match(String(ok[11]), /^"[A-Za-z0-9_-]{22}"$/);
        // Each value passes writeHead's checks, whatever the name (else the fast path would throw).
        for (const i of Object.values(OK_VALUES)) validateHeaderValue(String(ok[i - 1]), ok[i] as string);
        const { notModified } = answerOf(index, address, String(ok[OK_VALUES.etag]));
        for (const i of Object.values(NOT_MODIFIED_VALUES))
          validateHeaderValue(String(notModified[i - 1]), notModified[i] as string);
        // A record that is not kept (the slow path's) answers the same.
        const transient = index.transient(input, refs);
        const other = okHeaders();
        const again = answerInto(
          transient.layout,
          transient.page,
          transient.at,
          undefined,
          other,
          notModifiedHeaders(),
        );
        assert.equal(again, body);
        assert.deepEqual(other, ok);
      }),
      { numRuns: 300 },
    );
  });

  test("every kind of inbound has a secret writer, so standard credentials render without the builders", () => {
    const valid = PARAMS.slice(0, -1);
    const shapes = linkShapesOf(valid);
    for (const [i, params] of valid.entries()) {
      const shape = shapes[i];
      assert.ok(shape, params.remark);
      assert.ok(secretWriterFor(params, shape), `${params.remark}: its writer disagrees with the builder`);
    }
    const index = subscriptionIndex(1 << 20);
    const refs = index.adoptInbounds(
      refsOf(valid.map((p) => ({ params: p, isActive: true }))),
      index.generation,
    );
    const standard = valid.map((p) =>
      p.protocol === "trojan" || p.shadowsocksMethod === "chacha20-poly1305"
        ? randomBytes(18).toString("base64url")
        : p.protocol === "shadowsocks"
          ? randomBytes(p.shadowsocksMethod === "2022-blake3-aes-256-gcm" ? 32 : 16).toString("base64")
          : randomUUID(),
    );
    const address = index.store(inputOf("Std", standard), refs, index.generation);
    const text = new TextBuffer(64);
    assert.equal(
      index.layoutAt(address).templates.template.renderInto(text, index.page(address), index.offset(address)),
      true,
    );
  });

  test("the ETag changes with the name, a credential or an inbound's link; 304 carries the traffic", () => {
    const index = subscriptionIndex(1 << 20);
    const [a, b] = PARAMS as [LinkParams, LinkParams];
    const refs = index.adoptInbounds(refsOf([{ params: a, isActive: true }]), index.generation);
    const id = randomUUID();
    const store = (name: string, credential: string, onRefs = refs) =>
      index.store({ ...inputOf(name, [credential], 5, 6), userId: id }, onRefs, index.generation);
    const etag = (address: number) => String(answerOf(index, address).ok[11]);
    const first = etag(store("Ann", "11111111-1111-4111-8111-111111111111"));
    assert.equal(etag(store("Ann", "11111111-1111-4111-8111-111111111111")), first, "same values, same tag");
    assert.notEqual(etag(store("Anne", "11111111-1111-4111-8111-111111111111")), first);
    assert.notEqual(etag(store("Ann", "22222222-2222-4222-8222-222222222222")), first);
    const moved = index.adoptInbounds([{ id: randomUUID(), params: b, isStale: false }], index.generation);
    assert.notEqual(etag(store("Ann", "11111111-1111-4111-8111-111111111111", moved)), first);
    const address = store("Ann", "11111111-1111-4111-8111-111111111111");
    const conditional = answerOf(index, address, `"other", ${first}`);
    assert.equal(conditional.body, undefined);
    assert.deepEqual(
      [conditional.notModified[1], conditional.notModified[5]],
      [first, "upload=5; download=6; total=0; expire=0"],
    );
  });
});

describe("base64 and the text buffer", () => {
  test("encodeGroups encodes whole groups like Buffer, in both alphabets, at any offset", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 60 }), fc.nat(7), fc.boolean(), (bytes, at, urlSafe) => {
        const whole = bytes.subarray(0, bytes.length - (bytes.length % 3));
        const out = Buffer.alloc(at + 80, 0x21);
        const end = encodeGroups(whole, 0, whole.length, out, at, urlSafe ? URL_SAFE : STANDARD);
        assert.equal(end, at + (whole.length / 3) * 4);
        assert.equal(
          out.toString("latin1", at, end),
          Buffer.from(whole).toString(urlSafe ? "base64url" : "base64"),
        );
        assert.equal(out.toString("latin1", 0, at), "!".repeat(at), "nothing before `at` is touched");
      }),
    );
  });

  test("latin1Of and base64Of give toString()'s text for any bytes and bounds", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 90 }), fc.nat(90), fc.nat(90), (bytes, a, b) => {
        const buffer = Buffer.from(bytes);
        const start = Math.min(a, b, buffer.length);
        const end = Math.min(Math.max(a, b), buffer.length);
        assert.equal(latin1Of(buffer, start, end), buffer.toString("latin1", start, end));
        assert.equal(base64Of(buffer, start, end), buffer.toString("base64", start, end));
      }),
    );
  });

  test("pieces appended in any sizes read back in order, across growth and after a restart", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 12 }), (pieces) => {
        const text = new TextBuffer(4);
        text.append(Buffer.from("left over from an earlier answer"));
        text.end = 0;
        for (const piece of pieces) text.append(piece);
        assert.deepEqual(Buffer.from(text.bytes.subarray(0, text.end)), Buffer.concat(pieces));
        text.reserve(1000);
        assert.deepEqual(
          Buffer.from(text.bytes.subarray(0, text.end)),
          Buffer.concat(pieces),
          "kept on growth",
        );
      }),
    );
  });
});

describe("record store", () => {
  test("finds what it keeps by id and by token, forgets what is removed, through table growth and compaction", () => {
    const store = new RecordStore(256 * 1024, () => 0, 16 * 1024);
    const kept = new Map<string, { name: string; token: string | null }>();
    const gone = new Set<string>();
    const record = (id: string, name: string, token: string | null) =>
      prepareRecord({
        ...inputOf(name, [randomUUID(), "token"]),
        userId: id,
        layoutSlot: 1,
        subToken: token,
      });
    for (let round = 0; round < 3000; round++) {
      const id =
        round % 3 === 2 && kept.size > 0 ? ([...kept.keys()][round % kept.size] as string) : randomUUID();
      const old = store.removeText(id);
      if (old >= 0) {
        const was = kept.get(id)?.token;
        if (was) gone.add(was);
        kept.delete(id);
      }
      if (round % 5 === 4) continue; // removed only
      const name = "n".repeat(1 + (round % 90));
      // A new token each time (a rotation stores the record again), none for one record in seven.
      const token = round % 7 === 3 ? null : randomBytes(16).toString("hex");
      const prepared = record(id, name, token);
      assert.ok(prepared);
      const address = store.insert(prepared);
      if (address >= 0) kept.set(id, { name, token });
      else if (token) gone.add(token);
      assert.ok(store.bytes <= 256 * 1024, `${store.bytes} bytes`);
    }
    assert.ok(kept.size > 100, `${kept.size} kept`);
    assert.ok(gone.size > 100, `${gone.size} tokens gone`);
    assert.equal(store.entries, kept.size);
    assert.equal(store.tokens, [...kept.values()].filter((k) => k.token !== null).length);
    for (const [id, { name, token }] of kept) {
      const address = store.findText(id);
      assert.ok(address >= 0, id);
      const page = store.page(address);
      const at = store.offset(address);
      assert.equal(page.toString("hex", at + KEY, at + KEY + 16), id.replaceAll("-", ""));
      assert.equal(page.toString("utf8", at + NAME, at + NAME + name.length), name);
      if (token !== null)
        assert.equal(store.findToken(Buffer.from(token, "hex")), address, "by token: the same record");
    }
    for (const token of gone)
      assert.equal(store.findToken(Buffer.from(token, "hex")), -1, "a removed record's token");
    assert.equal(store.findToken(randomBytes(16)), -1);
    assert.equal(store.findText(randomUUID()), -1);
    assert.equal(store.findText("not-a-uuid"), -1);
    assert.equal(store.findText(randomUUID().toUpperCase()), -1, "uppercase ids are the slow path's");
  });

  test("a full store refuses a record instead of evicting one", () => {
    const store = new RecordStore(16 * 1024, () => 0, 4096);
    let refused = 0;
    const ids: string[] = [];
    for (let i = 0; i < 500; i++) {
      const id = randomUUID();
      const prepared = prepareRecord({ ...inputOf("x".repeat(200), []), userId: id, layoutSlot: 1 });
      assert.ok(prepared);
      if (store.insert(prepared) < 0) refused++;
      else ids.push(id);
    }
    assert.ok(refused > 0 && ids.length > 10, `${refused} refused, ${ids.length} kept`);
    for (const id of ids) assert.ok(store.findText(id) >= 0, "nothing kept was evicted");
    assert.ok(store.bytes <= 16 * 1024);
  });
});

describe("invalidation", () => {
  const [params] = PARAMS as [LinkParams];
  function indexWithUser() {
    const index = subscriptionIndex(1 << 20);
    const refs = index.adoptInbounds([{ id: randomUUID(), params, isStale: false }], index.generation);
    const input = inputOf("User", [randomUUID()]);
    assert.ok(index.store(input, refs, index.generation) >= 0);
    return { index, refs, input, ref: refs[0] as InboundRef };
  }

  test("a user change drops the record; the last record of a layout takes the layout with it", () => {
    const { index, input } = indexWithUser();
    assert.equal(index.stats().layouts, 1);
    index.dropUser(input.userId);
    assert.equal(index.find(input.userId, 0, 0), -1);
    assert.deepEqual([index.stats().entries, index.stats().layouts], [0, 0]);
  });

  test("an inbound change makes its layouts stale until the inbound is read again, then revives them", () => {
    const { index, input, ref } = indexWithUser();
    index.dropInbound(ref.id);
    assert.equal(index.find(input.userId, 0, 0), -1, "stale");
    assert.deepEqual(index.staleInbounds(), [ref.id]);
    const moved = { ...params, port: 9999 };
    index.adoptInbounds([{ id: ref.id, params: moved, isStale: false }], index.generation);
    assert.equal(index.reviveLayouts(), 1);
    const address = index.find(input.userId, 0, 0);
    assert.ok(address >= 0, "current again without reading the user");
    const link = Buffer.from(answerOf(index, address).body ?? "", "base64").toString();
    assert.match(link, /@fra1\.example\.net:9999\?/);
  });

  test("what was read before an invalidation is not kept after it", () => {
    const { index, ref } = indexWithUser();
    const generation = index.generation;
    index.dropUser(randomUUID());
    const late = inputOf("Late", [randomUUID()]);
    assert.equal(index.store(late, [ref], generation), -1);
    assert.equal(index.find(late.userId, 0, 0), -1);
    const readLate = index.adoptInbounds([{ id: randomUUID(), params, isStale: false }], generation);
    assert.equal(readLate[0]?.isStale, true, "used once, never shared");
    index.dropInbound(ref.id);
    assert.equal(
      index.store(inputOf("Stale", [randomUUID()]), [ref], index.generation),
      -1,
      "a stale ref is not kept",
    );
  });

  test("refreshed totals make an aged record current again, unless it was loaded in or after the read's second", () => {
    const { index, input } = indexWithUser(); // loaded at 1000
    const before = answerOf(index, index.find(input.userId, 0, 0));
    assert.equal(index.find(input.userId, 0, 1001), -1, "aged");
    assert.equal(
      index.refreshTotals(input.userId, 7, 9, 1000),
      false,
      "loaded in the read's second: maybe later",
    );
    assert.equal(index.refreshTotals(randomUUID(), 7, 9, 2000), false, "no record");
    assert.equal(index.find(input.userId, 0, 1001), -1, "still aged");
    assert.equal(index.refreshTotals(input.userId, 7, 9, 1001), true);
    const address = index.find(input.userId, 0, 1001);
    assert.ok(address >= 0, "current again");
    const after = answerOf(index, address);
    assert.equal(after.ok[3], "upload=7; download=9; total=0; expire=0");
    assert.equal(before.ok[3], "upload=0; download=0; total=0; expire=0");
    assert.equal(after.ok[11], before.ok[11], "the ETag leaves traffic out");
    assert.equal(after.body, before.body);
    assert.equal(index.refreshTotals(input.userId, 1, 1, 1001), false, "refreshed in that second already");
    assert.equal(answerOf(index, address).ok[3], after.ok[3]);
  });

  test("a used_bytes the record already makes refreshes it; another one asks for the split", () => {
    const { index, input } = indexWithUser(); // loaded at 1000, upload 0 + download 0
    assert.equal(index.refreshUsed(input.userId, 0, 1000), "skipped", "loaded in the read's second");
    assert.equal(index.refreshUsed(randomUUID(), 0, 2000), "skipped", "no record");
    assert.equal(index.refreshUsed(input.userId, 16, 1001), "changed");
    assert.equal(index.find(input.userId, 0, 1001), -1, "a changed one is not refreshed");
    assert.equal(index.refreshUsed(input.userId, 0, 1001), "refreshed");
    assert.ok(index.find(input.userId, 0, 1001) >= 0, "current again");
    assert.equal(index.refreshUsed(input.userId, 0, 1001), "skipped", "refreshed in that second already");
    const split = subscriptionIndex(1 << 20);
    const refs = split.adoptInbounds([{ id: randomUUID(), params, isStale: false }], split.generation);
    const user = inputOf("Split", [randomUUID()], 7, 9);
    split.store(user, refs, split.generation);
    assert.equal(split.refreshUsed(user.userId, 16, 1001), "refreshed", "7 + 9");
    assert.equal(split.refreshUsed(user.userId, 17, 1002), "changed");
  });

  test("a record older than the bound is not current; a budget of 0 keeps nothing", () => {
    const { index, input } = indexWithUser();
    assert.ok(index.find(input.userId, 0, 1000) >= 0);
    assert.equal(index.find(input.userId, 0, 1001), -1);
    const off = subscriptionIndex(0);
    const refs = off.adoptInbounds([{ id: randomUUID(), params, isStale: false }], off.generation);
    assert.equal(off.store(inputOf("Off", [randomUUID()]), refs, off.generation), -1);
    assert.equal(off.isFull(), true);
  });
});

test("credentials read back as the text they were", () => {
  fc.assert(
    fc.property(fc.array(credential, { maxLength: 5 }), (credentials) => {
      const prepared = prepareRecord({ ...inputOf("x", credentials), layoutSlot: 1 });
      assert.ok(prepared);
      const page = Buffer.alloc(prepared.length);
      writeRecord(page, 0, prepared);
      const where = new Int32Array(3 * credentials.length);
      assert.equal(credentialsAt(page, 0, where), credentials.length);
      const back = credentials.map((_, i) =>
        credentialText(page, where[3 * i] as number, where[3 * i + 1] as number, where[3 * i + 2] as number),
      );
      assert.deepEqual(back, credentials);
    }),
  );
});

test("request ids are uuid-shaped, distinct, and start over at random after 2^32", () => {
  const ids = new RequestIds();
  const seen = new Set(Array.from({ length: 1000 }, () => ids.next()));
  assert.equal(seen.size, 1000);
  for (const id of seen)
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const seeds = ["aaaaaaaa-aaaa-4aaa-8aaa-aaaaffffffff", "bbbbbbbb-bbbb-4bbb-8bbb-bbbb00000007"];
  const wrapping = new RequestIds(() => seeds.shift() ?? "");
  assert.equal(wrapping.next(), "bbbbbbbb-bbbb-4bbb-8bbb-bbbb00000007");
  assert.equal(wrapping.next(), "bbbbbbbb-bbbb-4bbb-8bbb-bbbb00000008");
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

test("settings: PORTCULLIS_SUB_CACHE_MB (512), _SYNC_MS (1000), _MAX_AGE_MS (300000); 0 keeps nothing in memory", () => {
  assert.deepEqual(loadConfig({}).subscriptions, {
    cacheBytes: 512 * 2 ** 20,
    syncIntervalMs: 1000,
    maxAgeMs: 300_000,
  });
  assert.equal(loadConfig({ PORTCULLIS_SUB_CACHE_MB: "0" }).subscriptions.cacheBytes, 0);
  assert.throws(() => loadConfig({ PORTCULLIS_SUB_CACHE_SYNC_MS: "10" }), /PORTCULLIS_SUB_CACHE_SYNC_MS/);
});
